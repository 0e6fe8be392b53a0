package app

import (
	"github.com/trustlayer/trustlayer/pkg/serve"

	"github.com/trustlayer/trustlayer/services/scoring/internal/web/mcp"
)

// MaxBatchBodyBytes caps a POST /v1/score/batch body: up to 100 items, each a scoring request.
const MaxBatchBodyBytes = 8 << 20

// routeLimits are the routes that need more than SCORING_MAX_BODY_BYTES or SCORING_HTTP_WRITE_TIMEOUT:
// a batch, and /mcp, whose requests may be as large as the SDK accepts (4 MiB) and whose GET is an
// SSE stream that stays open.
func routeLimits() []serve.RouteLimits {
	return []serve.RouteLimits{
		{Path: "/v1/score/batch", MaxBodyBytes: MaxBatchBodyBytes},
		{Path: mcp.EndpointPath, MaxBodyBytes: mcp.MaxBodyBytes, WriteTimeout: -1},
	}
}
