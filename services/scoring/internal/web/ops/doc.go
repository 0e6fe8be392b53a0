// Package ops serves the scoring service's operations routes beside the gateway (README
// "Operations"): GET /metrics (Prometheus text 0.0.4, private-network callers only), GET /metrics.json
// (a JSON snapshot for keys with the metrics:read scope) and GET /openapi.json (the API description
// generated from the protos, merged, and enriched with billing marks and the workflows' payload
// schemas). routes.go is the one table that documents the plain (non-gateway) routes.
package ops
