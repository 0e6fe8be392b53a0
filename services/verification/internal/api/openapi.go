package api

import (
	"maps"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/proto/openapi"
)

// InterfaceVersion is the release of the HTTP and gRPC interface the document describes
// (CHANGELOG.md).
const InterfaceVersion = "0.1.0"

// answers are the statuses each method answers besides its success and 401 (README "Routes"): the
// generator knows only the success, and documents it as 200. Each area keeps its own in its _doc.go.
var answers = union(coreAnswers, reliabilityAnswers, runAnswers, billingAnswers, enforcementAnswers, publicAnswers)

// union merges the areas' answers; an area never names another's methods.
func union(areas ...map[string]map[string]string) map[string]map[string]string {
	all := map[string]map[string]string{}
	for _, area := range areas {
		maps.Copy(all, area)
	}
	return all
}

// coreAnswers are those of organizations, intelligence, webhooks, data feeds, audits and the watch API.
var coreAnswers = map[string]map[string]string{
	"/verification.v1.OrganizationService/CreateOrganization":  {"201": "The organization", "422": "A name that is empty or longer than 200 characters"},
	"/verification.v1.OrganizationService/CreateApiKey":        {"201": "The key, its secret shown this once", "404": "organization_not_found", "422": "A name longer than 200 characters"},
	"/verification.v1.OrganizationService/ListApiKeys":         {"404": "organization_not_found"},
	"/verification.v1.OrganizationService/RevokeApiKey":        {"204": "Revoked (again: 204)", "404": "api_key_not_found"},
	"/verification.v1.IntelligenceService/GetServer":           {"404": "server_not_found"},
	"/verification.v1.IntelligenceService/ListServerHistory":   {"404": "server_not_found", "422": "A limit outside 1..100 or a malformed cursor"},
	"/verification.v1.IntelligenceService/DiffServerHistory":   {"404": "server_not_found or version_not_found", "422": "from or to missing"},
	"/verification.v1.IntelligenceService/ListServerChanges":   {"404": "server_not_found", "422": "A limit outside 1..100 or a malformed cursor"},
	"/verification.v1.IntelligenceService/ListChanges":         {"422": "A limit outside 1..200 or a malformed cursor"},
	"/verification.v1.IntelligenceService/ListHighRiskChanges": {"422": "A limit outside 1..200 or a malformed cursor"},
	"/verification.v1.IntelligenceService/CompareBatch":        {"422": "No items, more than 50, or an item without namespace or name"},
	"/verification.v1.WebhookService/CreateWatch": {"201": "The watch", "403": "watch_limit_reached", "404": "server_not_found",
		"409": "watch_already_exists", "422": "Invalid filters"},
	"/verification.v1.WebhookService/GetWatch":              {"404": "watch_not_found"},
	"/verification.v1.WebhookService/DeleteWatch":           {"204": "Archived", "404": "watch_not_found"},
	"/verification.v1.WebhookService/CreateWebhookEndpoint": {"201": "The endpoint, its secret shown this once", "403": "webhook_endpoint_limit_reached", "422": "A refused URL or an unknown event type"},
	"/verification.v1.WebhookService/DeleteWebhookEndpoint": {"204": "Revoked", "404": "webhook_endpoint_not_found"},
	"/verification.v1.WebhookService/EnableWebhookEndpoint": {"404": "webhook_endpoint_not_found"},
	"/verification.v1.WebhookService/GetWebhookDelivery":    {"404": "webhook_delivery_not_found"},
	"/verification.v1.WebhookService/ListWebhookDeliveries": {"404": "webhook_endpoint_not_found", "422": "A limit outside 1..100 or a malformed cursor"},
	"/verification.v1.WebhookService/ReplayWebhookDelivery": {"404": "webhook_delivery_not_found",
		"409": "webhook_endpoint_disabled or webhook_endpoint_revoked"},
	"/verification.v1.DataFeedService/ListArtifacts":    {"404": "dataset_not_found", "422": "A bad limit, format or date"},
	"/verification.v1.DataFeedService/DownloadArtifact": {"404": "dataset_not_found or artifact_not_found"},
	"/verification.v1.AuditService/IssueAuditToken":     {"201": "The signed audit token", "422": "No subject, no or unknown scopes, or ttl_seconds outside 1..86400"},
	"/verification.v1.AuditService/AuditMcp": {"400": "A refused target: remote_url_required, public_https_url_required, url_credentials_or_fragment_blocked, " +
		"invalid_port, https_port_required, ssrf_host_blocked, dns_resolution_failed, invalid_resolved_ip or ssrf_ip_blocked",
		"403": "Token missing required scope. Need one of: service:audit", "422": "A header the audit will not send",
		"503": "service_dependency_unavailable or service_audit_failed: the service could not finish; not a finding about the target"},
	"/verification.v1.AuditService/AuditReadiness": {"400": "A refused target (the codes of POST /v1/audits/mcp)",
		"403": "Token missing required scope. Need one of: service:readiness", "422": "A header the audit will not send",
		"503": "service_dependency_unavailable or service_audit_failed: the service could not finish; not a finding about the target"},
	"/verification.v1.AuditService/GetAudit": {"403": "Token missing required scope. Need one of: service:audit, service:readiness",
		"404": "audit_not_found: no such audit, or another holder's"},
	watchPrefix + "CreateWatchApiKey": {"201": "The key, its secret (apiKey) shown this once", "404": "organization_not_found",
		"422": "No or a bad organizationId, no name, no or unknown scopes, or expiresInSeconds outside 1..31536000"},
	watchPrefix + "ListWatchApiKeys":  {"404": "organization_not_found", "422": "organizationId missing or not a UUID"},
	watchPrefix + "RevokeWatchApiKey": {"204": "Revoked (again: 204)", "404": "watch_api_key_not_found"},
	watchPrefix + "CreateTargetWatch": {"201": "The watch, its first run due now", "403": "watch_limit_reached (with limit): the plan's cap of watches that are not archived",
		"409": "watch_already_exists (with watchId): a watch of this target and evaluator that is not archived",
		"422": "A refused target (loc body.targetUrl, type the refusal's code: public_https_url_required, ssrf_ip_blocked...), " +
			"an unknown evaluator, an unknown policyId, or intervalSeconds out of bounds"},
	watchPrefix + "ListTargetWatches": {"422": "A limit outside 1..100, a status other than active or paused, or a malformed cursor"},
	watchPrefix + "GetTargetWatch":    {"404": "watch_not_found: unknown, archived or another organization's"},
	watchPrefix + "UpdateTargetWatch": {"404": "watch_not_found",
		"422": "An empty body, a status other than active or paused, an unknown policyId, or intervalSeconds out of bounds"},
	watchPrefix + "DeleteTargetWatch": {"204": "Archived", "404": "watch_not_found"},
	watchPrefix + "RunTargetWatch": {"200": "The run, finished within 5 s", "202": "The run, still going", "404": "watch_not_found",
		"409": "watch_not_active: the watch is paused or archived"},
	watchPrefix + "ListTargetWatchRuns": {"404": "watch_not_found", "422": "A limit outside 1..100 or a malformed cursor"},
	watchPrefix + "CreateWatchPolicy": {"201": "The policy", "409": "watch_policy_name_exists",
		"422": "No name, no rules, minScore outside 0..100, or an unknown check id, readiness rule id or surface change"},
	watchPrefix + "ListWatchPolicies": {"422": "A limit outside 1..100 or a malformed cursor"},
	watchPrefix + "GetWatchPolicy":    {"404": "watch_policy_not_found"},
	watchPrefix + "UpdateWatchPolicy": {"404": "watch_policy_not_found", "409": "watch_policy_name_exists",
		"422": "An empty body, or bad rules (as for POST)"},
	watchPrefix + "DeleteWatchPolicy": {"204": "Deleted", "404": "watch_policy_not_found",
		"409": "watch_policy_in_use: a watch that is not archived uses it"},
}

// plainRoutes documents the routes no proto describes: the probes, the signed feed downloads and
// this document.
var plainRoutes = append(apidoc.ProbeRoutes("verification"),
	apidoc.Route{
		Method: "GET", Path: "/v1/intelligence/data/files/{artifact_id}", OperationID: "DataFeedService_DownloadFile", Tag: "DataFeedService",
		Summary: "An artifact's content, through a URL that POST .../download signed",
		Description: "The query parameters expires and signature are those of the signed URL (HMAC-SHA-256, valid 15 minutes); " +
			"no credential is needed beside them. ETag is the artifact's SHA-256.",
		Produces: "application/x-ndjson",
		Responses: map[string]string{
			"200": "the artifact (application/x-ndjson or text/csv)",
			"403": "a bad or expired signature",
			"404": "no such artifact",
		},
	},
	apidoc.Route{
		Method: "GET", Path: "/.well-known/jwks.json", OperationID: "AuditService_Jwks", Tag: "AuditService",
		Summary:     "The public keys of the audit tokens this service signs (JSON Web Key Set)",
		Description: "Verifiers choose the key by the token's kid. Cached for 5 minutes.",
		Produces:    "application/jwk-set+json",
		Responses:   map[string]string{"200": "the key set"},
	},
)

// Document builds the OpenAPI 2.0 document served at GET /openapi.json: the generated documents of
// verification.v1 and of the platform's build service, the plain routes, each operation's
// credential, and each operation's documented answers.
func Document() ([]byte, error) {
	return apidoc.Build(apidoc.Spec{
		Title:   "Verification service",
		Version: InterfaceVersion,
		Description: "MCP server audits (conformance and readiness), organizations and API keys, registry intelligence of MCP servers (sync, history, change feeds, compare), " +
			"watches and signed webhooks, data feeds, and the watch API of targets audited again and again (README.md). Organization routes, the audit token route " +
			"and the watch API key routes need X-Admin-Token, the audit routes an audit JWT, the other /v1/watch routes a watch API key (wk_...), " +
			`the other /v1/intelligence routes a bearer API key. Business errors are {"detail":{"error":"<code>","message":"..."}}.`,
		Files:   openapi.Files,
		Sources: []string{"verification/v1/*.swagger.json", "platform/v1/build.swagger.json"},
		SecurityDefinitions: map[string]any{
			"adminToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-Admin-Token",
				"description": "The deployment's admin token (VERIFICATION_ADMIN_TOKEN)"},
			"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Bearer <api_key>, a key issued to an organization (vk_...)"},
			"auditToken": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Bearer <jwt>, an audit token (POST /v1/audits/tokens, or the configured external issuer) with scope service:audit or service:readiness"},
			"watchKey": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization",
				"description": "Bearer <watch_api_key>, a watch API key (wk_..., POST /v1/watch/api-keys) with scope watch:read (reads) or watch:write (reads and writes)"},
		},
		Security: []any{},
		Plain:    slices.Concat(plainRoutes, billingPlainRoutes, publicPlainRoutes),
		Extend:   extend,
	})
}

// htmlPages are the methods that answer a page (google.api.HttpBody) rather than JSON.
var htmlPages = map[string]bool{
	"/verification.v1.ReliabilityBillingService/GetDashboard":   true,
	"/verification.v1.ReliabilityRunService/GetRunEvidencePage": true,
}

func extend(op map[string]any, o apidoc.Operation) {
	if htmlPages[o.GRPCMethod] {
		op["produces"] = []any{"text/html"}
		if responses, _ := op["responses"].(map[string]any); responses != nil {
			responses["200"] = map[string]any{"description": "The page (text/html; charset=utf-8)"}
		}
	}
	switch {
	case o.GRPCMethod == auditPrefix+"IssueAuditToken":
		op["security"] = []any{map[string]any{"adminToken": []any{}}}
		apidoc.AddResponse(op, "401", "Missing or wrong X-Admin-Token")
	case strings.HasPrefix(o.GRPCMethod, auditPrefix):
		op["security"] = []any{map[string]any{"auditToken": []any{}}}
		apidoc.AddResponse(op, "401", "Missing bearer token, or Invalid or expired token")
	case watchAdminMethods[o.GRPCMethod]:
		op["security"] = []any{map[string]any{"adminToken": []any{}}}
		apidoc.AddResponse(op, "401", "Missing or wrong X-Admin-Token")
	case strings.HasPrefix(o.GRPCMethod, watchPrefix):
		op["security"] = []any{map[string]any{"watchKey": []any{}}}
		apidoc.AddResponse(op, "401", "missing_bearer_token, invalid_or_revoked_api_key or expired_api_key")
		apidoc.AddResponse(op, "403", "api_key_missing_required_scope: need one of "+strings.Join(watchScopes(o.GRPCMethod), ", "))
	case strings.HasPrefix(o.GRPCMethod, adminPrefix):
		op["security"] = []any{map[string]any{"adminToken": []any{}}}
		apidoc.AddResponse(op, "401", "Missing or wrong X-Admin-Token")
	case strings.HasPrefix(o.GRPCMethod, publicPrefix):
		op["security"] = []any{} // public: no credential, and so no 401
	case strings.HasPrefix(o.GRPCMethod, servicePrefix):
		op["security"] = []any{map[string]any{"apiKey": []any{}}}
		apidoc.AddResponse(op, "401", "Missing bearer token, or an invalid or revoked API key")
	default:
		op["security"] = []any{}
		return
	}
	responses, _ := op["responses"].(map[string]any)
	for status, description := range answers[o.GRPCMethod] {
		if status >= "400" {
			apidoc.AddResponse(op, status, description)
			continue
		}
		if status == "202" {
			// Accepted, with the success's body: beside the 200 when the method lists a 200 of its own
			// (a run that may finish in time), in its place otherwise (a queued scan).
			if success, ok := responses["200"].(map[string]any); ok {
				accepted := maps.Clone(success)
				accepted["description"] = description
				responses[status] = accepted
				if _, both := answers[o.GRPCMethod]["200"]; !both {
					delete(responses, "200")
				}
			}
			continue
		}
		// A created or deleted resource answers 201 or 204; the generator documents its success as 200.
		if success, ok := responses["200"].(map[string]any); ok {
			delete(responses, "200")
			success["description"] = description
			if status == "204" {
				delete(success, "schema")
			}
			responses[status] = success
		}
	}
}
