package api

import "github.com/trustlayer/trustlayer/pkg/apidoc"

// billingAnswers are the statuses this area's methods answer besides success and 401.
var billingAnswers = map[string]map[string]string{}

// billingPlainRoutes documents the routes of this area that no proto describes.
var billingPlainRoutes []apidoc.Route
