package api

// runAnswers are the statuses this area's methods answer besides success and 401.
var runAnswers = map[string]map[string]string{}
