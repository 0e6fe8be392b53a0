package api

// enforcementAnswers are the statuses this area's methods answer besides success and 401.
var enforcementAnswers = map[string]map[string]string{}
