package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// ServerName is the implementation name announced at initialize.
const ServerName = "trustlayer-scoring"

// ToolName is the scoring tool (README).
const ToolName = "score_workflow"

// Scored is the answer of a scoring call: the score response, exactly the body of POST /v1/score, and
// its x-request-id (the key of feedback).
type Scored struct {
	Result    json.RawMessage
	RequestID string
}

// Scorer scores the arguments of a score_workflow call ({workflow, payload, options?}, the body of
// POST /v1/score). An *apierror.Error is the service's refusal (401, 402, 409, 422, 429), which the
// tool reports as a tool error with its body; any other error is the tool's own failure.
type Scorer func(ctx context.Context, req *sdk.CallToolRequest, args json.RawMessage) (Scored, error)

// NewServer returns the MCP server of both transports: the tool score_workflow, which scores with
// score, and the prompts.
func NewServer(version string, score Scorer) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{
		Name: ServerName, Title: "Claim scoring", Version: version,
		Description: "Scores healthcare claims: denial risk, prior-authorization need, expected reimbursement. Decision support only.",
	}, &sdk.ServerOptions{
		Instructions: instructions,
		// No logging capability: the server sends no log notifications. Completion of the prompts'
		// enumerated arguments is offered.
		Capabilities:      &sdk.ServerCapabilities{},
		CompletionHandler: complete,
	})
	s.AddTool(scoreTool(), scoreHandler(score))
	addPrompts(s)
	return s
}

const instructions = "Call score_workflow with a workflow (healthcare.denial, healthcare.prior_auth or " +
	"healthcare.reimbursement) and the claim payload; the input schema lists each workflow's fields. " +
	"Scores are decision support only: same input and model version, same answer. Every call is a " +
	"billable scoring call of the key. Send no patient names, dates of birth or member ids: the payload " +
	"needs none (patient_id is an opaque identifier of the caller's system)."

func scoreTool() *sdk.Tool {
	return &sdk.Tool{
		Name:  ToolName,
		Title: "Score a healthcare claim",
		Description: "Scores one claim with a workflow of the claim-scoring service, exactly as POST /v1/score: " +
			"healthcare.denial (probability that the payer denies the claim, with risk tier and operating threshold), " +
			"healthcare.prior_auth (probability that prior authorization is required or at risk, with payer support and policy signals), " +
			"healthcare.reimbursement (expected allowed amount). The result is the score response (score, risk_level, " +
			"confidence, model_version, explanation.top_factors, details). A validation failure comes back as a tool error " +
			"listing every field and rule. Needs an API key (Authorization: Bearer, or x-service-api-key) or an OAuth " +
			"access token; each successful call is one billable scoring call.",
		InputSchema: inputSchema(),
		Annotations: &sdk.ToolAnnotations{
			Title: "Score a healthcare claim", ReadOnlyHint: true, IdempotentHint: true,
			DestructiveHint: new(false), OpenWorldHint: new(false),
		},
	}
}

// inputSchema is the tool's arguments: the body of POST /v1/score, with each workflow's published
// payload schema (internal/claim) applied to payload when workflow names it.
func inputSchema() map[string]any {
	var workflows []any
	var conditional []any
	for _, sp := range claim.Specs() {
		workflows = append(workflows, string(sp.Workflow))
		var payload map[string]any
		if err := json.Unmarshal(sp.Schema, &payload); err != nil {
			panic(fmt.Sprintf("workflow %s: payload schema: %v", sp.Workflow, err)) // embedded, checked by claim's tests
		}
		delete(payload, "$schema") // a keyword of a schema resource's root only
		conditional = append(conditional, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"workflow": map[string]any{"const": string(sp.Workflow)}}},
			"then": map[string]any{"properties": map[string]any{"payload": payload}},
		})
	}
	return map[string]any{
		"$schema":  "https://json-schema.org/draft/2020-12/schema",
		"type":     "object",
		"required": []any{"workflow", "payload"},
		"properties": map[string]any{
			"workflow": map[string]any{"type": "string", "enum": workflows, "description": "The scoring workflow."},
			"payload":  map[string]any{"type": "object", "description": "The claim; its fields depend on the workflow (see the conditions below)."},
			"options": map[string]any{
				"type": "object", "additionalProperties": false,
				"properties": map[string]any{
					"model_version":        map[string]any{"type": "string", "description": "Pins a model version."},
					"allow_fallback":       map[string]any{"type": "boolean", "description": "false: an unavailable pinned version is an error instead of a fallback."},
					"operating_point":      map[string]any{"type": "string", "enum": []any{"high_recall", "balanced", "high_precision"}},
					"distribution_profile": map[string]any{"type": "string", "enum": []any{"synthetic_v1", "cms_v1", "commercial_beta"}},
				},
			},
		},
		"allOf": conditional,
	}
}

func scoreHandler(score Scorer) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		scored, err := score(ctx, req, args)
		var refused *apierror.Error
		switch {
		case errors.As(err, &refused):
			return refusal(refused, scored.RequestID), nil
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err() // the client went away: a protocol-level cancellation
		case err != nil:
			// The cause was logged where it happened (the interceptor, the HTTP client); it never
			// reaches the agent.
			return refusal(apierror.New(http.StatusInternalServerError, "Internal error while scoring; try again"), scored.RequestID), nil
		}
		return &sdk.CallToolResult{
			Meta:              requestMeta(scored.RequestID),
			Content:           []sdk.Content{&sdk.TextContent{Text: string(scored.Result)}},
			StructuredContent: scored.Result,
		}, nil
	}
}

// refusal is a tool error (isError) carrying the service's error body, with its HTTP status beside the
// body's fields: detail always, upgrade_url on 402, retry_after_seconds on 429, errors on a validation
// 422. The text content is the detail, and for a 402 where to upgrade, for the agent to relay.
func refusal(e *apierror.Error, requestID string) *sdk.CallToolResult {
	body := map[string]any{"status": e.Status}
	for k, v := range e.Body {
		body[k] = v
	}
	text, _ := e.Body["detail"].(string)
	if text == "" {
		text = http.StatusText(e.Status)
	}
	if u, ok := e.Body["upgrade_url"].(string); ok {
		text += " Upgrade: " + u
	}
	if list, ok := e.Body["errors"].([]any); ok && len(list) > 0 {
		var lines []string
		for _, item := range list {
			if m, ok := item.(map[string]any); ok {
				lines = append(lines, fmt.Sprintf("- %v (%v): %v", m["field"], m["rule"], m["message"]))
			}
		}
		text += "\n" + strings.Join(lines, "\n")
	}
	return &sdk.CallToolResult{
		Meta:              requestMeta(requestID),
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: body,
	}
}

// requestMeta carries the scoring response's x-request-id, the key of POST /v1/feedback.
func requestMeta(id string) sdk.Meta {
	if id == "" {
		return nil
	}
	return sdk.Meta{"request_id": id}
}
