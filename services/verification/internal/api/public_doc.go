package api

import "github.com/trustlayer/trustlayer/pkg/apidoc"

// publicAnswers are the statuses this area's methods answer besides success and 401.
var publicAnswers = map[string]map[string]string{}

// publicPlainRoutes documents the routes of this area that no proto describes.
var publicPlainRoutes []apidoc.Route
