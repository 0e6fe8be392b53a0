package api

// reliabilityAnswers are the statuses this area's methods answer besides success and 401.
var reliabilityAnswers = map[string]map[string]string{}
