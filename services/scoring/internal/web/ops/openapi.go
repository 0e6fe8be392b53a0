package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/proto/openapi"
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

// OpenAPI serves GET /openapi.json: doc, built once at start by Document.
func OpenAPI(doc []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	})
}

// Document builds the service's OpenAPI 2.0 document: the generated per-proto documents merged into
// one (a definition two files define differently is an error, not a silent overwrite), the info,
// host and security of the service, the plain routes of PlainRoutes, x-billable/x-meter on every
// operation and x-workflowSchemas with each workflow's published payload schema. publicURL
// (SCORING_PUBLIC_URL) gives the host and scheme.
func Document(publicURL string) ([]byte, error) {
	return build(openapi.Files, publicURL, PlainRoutes, api.MethodAccess)
}

func build(files fs.FS, publicURL string, plain []PlainRoute, access func(string) string) ([]byte, error) {
	doc := map[string]any{
		"swagger": "2.0",
		"info": map[string]any{
			"title":   "Claim-scoring service",
			"version": InterfaceVersion,
			"description": "Scores healthcare claims per workflow (denial, prior authorization, reimbursement), with appeals, " +
				"feedback, metering, keys, billing and a control plane (README). Decision support only. Every error body " +
				"is {\"detail\": ...}. Generated from the protos; see x-billable, x-meter and x-workflowSchemas.",
		},
		"basePath":    "/",
		"consumes":    []any{"application/json"},
		"produces":    []any{"application/json"},
		"paths":       map[string]any{},
		"definitions": map[string]any{},
		"securityDefinitions": map[string]any{
			"bearer": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Authorization: Bearer <API key or legacy JWT>"},
			"serviceApiKey": map[string]any{"type": "apiKey", "in": "header", "name": "x-service-api-key",
				"description": "The API key itself, for hosted agent connections"},
			"adminToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-Admin-Token",
				"description": "The deployment's admin token (SCORING_ADMIN_TOKEN)"},
			"workspaceSession": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Authorization: Bearer <control-plane workspace session>"},
		},
		"security":          bearerSecurity(),
		"x-workflowSchemas": workflowSchemas(),
	}
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		doc["host"] = u.Host
		doc["schemes"] = []any{u.Scheme}
		if p := strings.TrimRight(u.Path, "/"); p != "" {
			doc["basePath"] = p
		}
	}
	var tags []any
	for _, pattern := range sources {
		names, err := fs.Glob(files, pattern)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if err := mergeFile(doc, &tags, files, name, access); err != nil {
				return nil, err
			}
		}
	}
	paths := doc["paths"].(map[string]any)
	for _, r := range plain {
		item, _ := paths[r.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[r.Path] = item
		}
		method := strings.ToLower(r.Method)
		if _, dup := item[method]; dup {
			return nil, fmt.Errorf("openapi: %s %s is both a gateway route and a plain route", r.Method, r.Path)
		}
		item[method] = plainOperation(r)
		tags = addTag(tags, r.Tag, "")
	}
	doc["tags"] = tags
	doc["definitions"].(map[string]any)["Error"] = map[string]any{
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mergeFile adds one generated document's paths, definitions and tags to doc, enriching each
// operation. The proto package of the file is its directory ("scoring/v1" -> scoring.v1), and an
// operation id is Service_Method, so together they name the gRPC method.
func mergeFile(doc map[string]any, tags *[]any, files fs.FS, name string, access func(string) string) error {
	raw, err := fs.ReadFile(files, name)
	if err != nil {
		return err
	}
	var part struct {
		Paths       map[string]map[string]map[string]any `json:"paths"`
		Definitions map[string]any                       `json:"definitions"`
		Tags        []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(raw, &part); err != nil {
		return fmt.Errorf("openapi: %s: %w", name, err)
	}
	pkg := strings.ReplaceAll(path.Dir(name), "/", ".")
	paths := doc["paths"].(map[string]any)
	for p, ops := range part.Paths {
		item, _ := paths[p].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[p] = item
		}
		for method, op := range ops {
			if _, dup := item[method]; dup {
				return fmt.Errorf("openapi: %s %s is defined twice (%s)", strings.ToUpper(method), p, name)
			}
			id, _ := op["operationId"].(string)
			service, rpc, _ := strings.Cut(id, "_")
			full := "/" + pkg + "." + service + "/" + rpc
			who := AccessPublic // the platform's build service
			if strings.HasPrefix(full, "/scoring.v1.") {
				who = access(full)
			}
			enrich(op, who, nil, billableMethods[full])
			item[method] = op
		}
	}
	defs := doc["definitions"].(map[string]any)
	for k, v := range part.Definitions {
		if old, ok := defs[k]; ok && !reflect.DeepEqual(old, v) {
			return fmt.Errorf("openapi: definition %s differs between files (%s)", k, name)
		}
		defs[k] = v
	}
	for _, t := range part.Tags {
		*tags = addTag(*tags, t.Name, t.Description)
	}
	return nil
}

// enrich sets an operation's security, its billing marks and the error answers every route of
// this service can give.
func enrich(op map[string]any, who string, scopes []string, routeID string) {
	responses, _ := op["responses"].(map[string]any)
	if responses == nil {
		responses = map[string]any{}
		op["responses"] = responses
	}
	errorResponse := func(code, desc string) {
		if _, ok := responses[code]; !ok {
			responses[code] = map[string]any{"description": desc, "schema": map[string]any{"$ref": "#/definitions/Error"}}
		}
	}
	switch who {
	case AccessBearer:
		op["security"] = bearerSecurity()
		errorResponse("401", "Missing or invalid bearer token")
	case AccessAdmin:
		op["security"] = []any{map[string]any{"adminToken": []any{}}}
		errorResponse("401", "Missing or wrong X-Admin-Token")
	case AccessWorkspace:
		op["security"] = []any{map[string]any{"workspaceSession": []any{}}}
		errorResponse("401", "Missing or invalid workspace session")
	default: // public, private network
		op["security"] = []any{}
	}
	op["x-access"] = who
	if len(scopes) > 0 {
		op["x-scopes"] = scopes
		errorResponse("403", "The key lacks a required scope")
	}
	op["x-billable"] = routeID != ""
	if routeID != "" {
		op["x-meter"] = meter
		op["x-route-id"] = routeID
		errorResponse("402", "Trial quota exhausted; the body carries upgrade_url")
		errorResponse("409", "allow_fallback is false and the pinned model_version is unavailable")
		errorResponse("422", "Validation failure")
		errorResponse("429", "Throttled (rate or in-flight limit of the key); Retry-After when known")
	}
}

func bearerSecurity() []any {
	return []any{map[string]any{"bearer": []any{}}, map[string]any{"serviceApiKey": []any{}}}
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func plainOperation(r PlainRoute) map[string]any {
	op := map[string]any{"operationId": r.OperationID, "summary": r.Summary, "tags": []any{r.Tag}}
	if r.Description != "" {
		op["description"] = r.Description
	}
	produces := r.Produces
	if produces == "" {
		produces = "application/json"
	}
	op["produces"] = []any{produces}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
		params = append(params, map[string]any{"name": strings.TrimSuffix(m[1], "..."), "in": "path", "required": true, "type": "string"})
	}
	if r.Consumes != "" {
		op["consumes"] = []any{r.Consumes}
		params = append(params, map[string]any{"name": "body", "in": "body", "required": true, "schema": map[string]any{"type": "object"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	responses := map[string]any{}
	for code, desc := range r.Responses {
		resp := map[string]any{"description": desc}
		if code >= "400" {
			resp["schema"] = map[string]any{"$ref": "#/definitions/Error"}
		}
		responses[code] = resp
	}
	op["responses"] = responses
	enrich(op, r.Access, r.Scopes, r.RouteID)
	return op
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

func addTag(tags []any, name, description string) []any {
	if name == "" || slices.ContainsFunc(tags, func(t any) bool { return t.(map[string]any)["name"] == name }) {
		return tags
	}
	t := map[string]any{"name": name}
	if description != "" {
		t["description"] = description
	}
	return append(tags, t)
}
