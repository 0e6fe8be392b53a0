// Package ops serves the scoring service's operations routes beside the gateway (README
// "Operations"): GET /metrics (Prometheus text 0.0.4, private-network callers only), GET /metrics.json
// (a JSON snapshot for keys with the metrics:read scope) and the document of GET /openapi.json (built
// by pkg/apidoc from the protos, with the service's credentials, billing marks and the workflows'
// payload schemas). routes.go is the one table that documents the plain (non-gateway) routes.
package ops
