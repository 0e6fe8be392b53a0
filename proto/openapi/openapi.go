// Package openapi embeds the OpenAPI 2.0 (Swagger) documents that protoc-gen-openapiv2 writes beside
// this file, one per .proto (`make generate`), so that a service can build and serve its API
// description from its own binary. go:embed reaches only files in or below the embedding package's
// directory, hence a package here rather than in the services.
package openapi

import "embed"

// Files holds every generated document, by path below proto/openapi ("scoring/v1/scoring.swagger.json").
//
//go:embed */v1/*.swagger.json
var Files embed.FS
