package ops

import (
	"encoding/json"
	"io/fs"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/proto/openapi"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// InterfaceVersion is the interface release the document describes (CHANGELOG.md).
const InterfaceVersion = "1.4.0"

// sources are the generated documents that describe what this service serves: its own protos and
// the platform's build service (GET /v1/build). error.proto has no routes of its own.
var sources = []string{"scoring/v1/*.swagger.json", "platform/v1/build.swagger.json"}

// billableMethods are the scoring routes (README "Keys, limits and metering": a scoring call is a 2xx from a scoring
// endpoint, unified or legacy; a batch bills each successful item), with their telemetry route ids.
// Validation, feedback, limits and usage are not billable.
var billableMethods = map[string]string{
	"/scoring.v1.ScoringService/Score":                 score.RouteUnified,
	"/scoring.v1.ScoringService/ScoreBatch":            score.RouteBatch,
	"/scoring.v1.ScoringService/ScoreDenial":           score.RouteDenial,
	"/scoring.v1.ScoringService/PredictPriorAuth":      score.RoutePriorAuth,
	"/scoring.v1.ScoringService/EstimateReimbursement": score.RouteReimbursement,
}

// meter is the x-meter value of billable operations: the meter of GET /v1/usage.
const meter = "scoring_calls"

// Document builds the service's OpenAPI 2.0 document with pkg/apidoc: the generated per-proto
// documents, the plain routes of plainRoutes, the service's credentials, x-billable/x-meter on every
// operation and x-workflowSchemas with each workflow's published payload schema. publicURL
// (SCORING_PUBLIC_URL) gives the host and scheme.
func Document(publicURL string) ([]byte, error) {
	return build(openapi.Files, publicURL, plainRoutes, api.MethodAccess)
}

// build is Document with its inputs given, so that a test can feed it documents that conflict.
func build(files fs.FS, publicURL string, plain []apidoc.Route, access func(fullMethod string) string) ([]byte, error) {
	return apidoc.Build(apidoc.Spec{
		Title:   "Claim-scoring service",
		Version: InterfaceVersion,
		Description: "Scores healthcare claims per workflow (denial, prior authorization, reimbursement), with appeals, " +
			"feedback, metering, keys, billing and a control plane (README). Decision support only. Every error body " +
			"is {\"detail\": ...}. Generated from the protos. Billable operations carry x-billable: true and x-meter: " +
			"scoring_calls; x-workflowSchemas maps each workflow id to its payload JSON Schema.",
		Files:     files,
		Sources:   sources,
		PublicURL: publicURL,
		SecurityDefinitions: map[string]any{
			"bearer": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Authorization: Bearer <API key or legacy JWT>"},
			"serviceApiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-service-api-key",
				"description": "The API key itself, for hosted agent connections"},
			"adminToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-Admin-Token",
				"description": "The deployment's admin token (SCORING_ADMIN_TOKEN)"},
			"workspaceSession": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Authorization: Bearer <control-plane workspace session>"},
		},
		Security:    bearerSecurity(),
		Definitions: map[string]any{"Error": errorDefinition()},
		Extensions:  map[string]any{"x-workflowSchemas": workflowSchemas()},
		Plain:       plain,
		Extend:      extend(access),
	})
}

// extend sets an operation's security, its billing marks and the error answers every route of this
// service can give. A scoring.v1 method's access and billing follow from the interceptor's table
// (access) and billableMethods; a plain route's from its x-access, x-scopes and x-route-id.
func extend(access func(fullMethod string) string) func(map[string]any, apidoc.Operation) {
	return func(op map[string]any, o apidoc.Operation) {
		who, _ := op["x-access"].(string)
		routeID, _ := op["x-route-id"].(string)
		switch {
		case strings.HasPrefix(o.GRPCMethod, "/scoring.v1."):
			who, routeID = access(o.GRPCMethod), billableMethods[o.GRPCMethod]
		case who == "": // the platform's build service, the probes
			who = accessPublic
		}
		switch who {
		case accessBearer:
			op["security"] = bearerSecurity()
			apidoc.AddResponse(op, "401", "Missing or invalid bearer token")
		case accessAdmin:
			op["security"] = []any{map[string]any{"adminToken": []any{}}}
			apidoc.AddResponse(op, "401", "Missing or wrong X-Admin-Token")
		case accessWorkspace:
			op["security"] = []any{map[string]any{"workspaceSession": []any{}}}
			apidoc.AddResponse(op, "401", "Missing or invalid workspace session")
		default: // public, private network
			op["security"] = []any{}
		}
		op["x-access"] = who
		if o.GRPCMethod == scoringv1.KeyService_IssueTrialKey_FullMethodName {
			apidoc.AddResponse(op, "429", "Too many trial keys minted from this client address, or in all, within the hour; Retry-After")
		}
		if _, ok := op["x-scopes"]; ok {
			apidoc.AddResponse(op, "403", "The key lacks a required scope")
		}
		op["x-billable"] = routeID != ""
		if routeID != "" {
			op["x-meter"] = meter
			op["x-route-id"] = routeID
			apidoc.AddResponse(op, "402", "Trial quota exhausted; the body carries upgrade_url")
			apidoc.AddResponse(op, "409", "allow_fallback is false and the pinned model_version is unavailable")
			apidoc.AddResponse(op, "422", "Validation failure")
			apidoc.AddResponse(op, "429", "Throttled (rate or in-flight limit of the key); Retry-After when known")
		}
	}
}

func bearerSecurity() []any {
	return []any{map[string]any{"bearer": []any{}}, map[string]any{"serviceApiKey": []any{}}}
}

// errorDefinition replaces apidoc's Error: this service's error bodies carry more than detail.
func errorDefinition() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": `Every error body (README "Routes"); 402 adds error and upgrade_url, a payload 422 adds errors.`,
		"properties": map[string]any{
			"detail":              map[string]any{"type": "string"},
			"error":               map[string]any{"type": "string"},
			"upgrade_url":         map[string]any{"type": "string"},
			"retry_after_seconds": map[string]any{"type": "number"},
			"errors": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
				"field": map[string]any{"type": "string"}, "rule": map[string]any{"type": "string"}, "message": map[string]any{"type": "string"},
			}}},
		},
		"required": []any{"detail"},
	}
}

// workflowSchemas maps each workflow id to the JSON Schema (2020-12) of its payload, exactly as GET
// /v1/workflows/{workflow}/schema serves it.
func workflowSchemas() map[string]any {
	out := map[string]any{}
	for _, sp := range claim.Specs() {
		out[string(sp.Workflow)] = json.RawMessage(sp.Schema)
	}
	return out
}
