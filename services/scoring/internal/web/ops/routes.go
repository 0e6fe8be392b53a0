package ops

import (
	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// Who may call a route: the x-access of its operation, from which its security follows. A plain
// route without x-access is public.
const (
	accessPublic         = "public"
	accessBearer         = "bearer"
	accessAdmin          = "admin"
	accessWorkspace      = "workspace"
	accessPrivateNetwork = "private_network"
)

// plainRoutes documents every plain route the service serves: the probes every service has, then
// the service's own. A route registered with p.Server.Handle and missing here fails
// TestOpenAPICoversEveryRoute (app/ops_test.go): add its entry when you add the handler. A route
// that needs a credential says so in x-access (and x-scopes); a billable one names its telemetry
// route id in x-route-id.
var plainRoutes = append(apidoc.ProbeRoutes("scoring"), []apidoc.Route{
	{
		Method: "GET", Path: "/health", OperationID: "Operations_Health", Tag: "Operations",
		Summary:   "Minimal availability (the same answer as /healthz)",
		Responses: map[string]string{"200": `{"status":"ok","service":"scoring"}`},
	},
	{
		Method: "GET", Path: "/metrics", OperationID: "Operations_Metrics", Tag: "Operations",
		Extensions: map[string]any{"x-access": accessPrivateNetwork},
		Summary:    "Prometheus metrics",
		Description: "Prometheus text exposition format 0.0.4 whatever the Accept header asks: the service's OpenTelemetry " +
			"metrics (scoring_decisions_total by route_id, workflow and risk_level; HTTP and gRPC server metrics) and the Go " +
			"runtime and process collectors. Answered to callers on loopback, RFC 1918, unique local (fc00::/7) and link-local " +
			"addresses only; behind proxies, the caller is read from X-Forwarded-For by SCORING_TRUSTED_PROXY_HOPS and every proxy must be private too.",
		Produces: "text/plain; version=0.0.4; charset=utf-8",
		Responses: map[string]string{
			"200": "metrics in the text format 0.0.4",
			"403": "the caller is not on a private network",
		},
	},
	{
		Method: "GET", Path: "/metrics.json", OperationID: "Operations_MetricsJSON", Tag: "Operations",
		Extensions: map[string]any{"x-access": accessBearer, "x-scopes": []string{"metrics:read"}},
		Summary:    "Compact metrics snapshot",
		Description: "metrics_schema_version 1: service, build, uptime, this replica's scoring calls by route id, workflow " +
			"and risk level and HTTP requests by status class since it started, the month's persisted usage by plan, runtime.",
		Responses: map[string]string{
			"200": "the snapshot",
			"401": "missing or invalid bearer token",
			"403": "the key lacks the metrics:read scope",
		},
	},
	{
		Method: "GET", Path: "/v1/models/reliability/{name}", OperationID: "ScoringService_ReliabilityDiagram", Tag: "ScoringService",
		Summary: "A model card's reliability diagram", Produces: "image/png",
		Responses: map[string]string{"200": "the diagram (PNG)", "404": "no such diagram"},
	},
	{
		Method: "POST", Path: "/v1/billing/webhook", OperationID: "Billing_Webhook", Tag: "Billing",
		Summary: "Payment processor webhook",
		Description: "Authenticated by the processor's signature over the raw body (Stripe-Signature), not by a key. An applied, " +
			"duplicate or ignored event answers 200 so that the processor stops retrying.",
		Consumes: "application/json",
		Responses: map[string]string{
			"200": "{received, event_id, outcome}",
			"400": "bad or stale signature, or an unreadable event",
			"413": "body too large",
			"503": "billing is not configured",
		},
	},
	{
		Method: "GET", Path: "/v1/billing/checkout/return", OperationID: "Billing_CheckoutReturn", Tag: "Billing",
		Summary:   "Where the hosted checkout returns the customer (?result=success or cancelled); changes nothing",
		Responses: map[string]string{"200": "{status, detail}"},
	},
	{
		Method: "GET", Path: "/v1/billing/checkout-session", OperationID: "Billing_CheckoutPage", Tag: "Billing",
		Summary: "The 402's upgrade_url opened as a link: a page that asks for the trial key, or with the key as bearer a redirect to the hosted checkout",
		Description: "Without a credential: an HTML page whose form opens the checkout with POST /v1/billing/checkout-session. " +
			"With the trial key (Authorization: Bearer or x-service-api-key): 303 See Other to a new hosted checkout's url, " +
			"with the refusals of POST /v1/billing/checkout-session (401, 403, 503, 502).",
		Produces: "text/html",
		Responses: map[string]string{
			"200": "the upgrade page (text/html)",
			"303": "Location: the hosted checkout",
			"401": "{detail}: the key is unknown or revoked",
			"403": "{detail}: not a trial key",
			"503": "{detail}: billing is not configured",
		},
	},
	{
		Method: "POST", Path: "/mcp", OperationID: "Agent_MCP", Tag: "Agent",
		Extensions: map[string]any{"x-access": accessBearer, "x-route-id": score.RouteUnified},
		Summary:    "Hosted agent endpoint (MCP, Streamable HTTP, stateless, JSON answers)",
		Description: "JSON-RPC over Streamable HTTP. initialize, tools/list and prompts/list are public; tools/call of " +
			"score_workflow (arguments: workflow and the claim payload) needs a credential (Authorization: Bearer with an API key, " +
			"legacy JWT or OAuth access token, or x-service-api-key) and is one scoring call on the key's meter: the endpoint calls POST /v1/score's handler in process.",
		Consumes: "application/json",
		Responses: map[string]string{
			"200": "the JSON-RPC answer",
			"401": "tools/call without a valid credential (WWW-Authenticate names the protected-resource metadata)",
		},
	},
	discovery("/.well-known/mcp/server-card.json", "Agent_ServerCard", "Agent", "The MCP server card", "the server card"),
	discovery("/.well-known/oauth-protected-resource", "Agent_ProtectedResourceMetadata", "Agent",
		"OAuth protected-resource metadata of the MCP endpoint (RFC 9728)", "the metadata"),
	discovery("/.well-known/oauth-protected-resource/mcp", "Agent_ProtectedResourceMetadataMCP", "Agent",
		"The same metadata at the path-suffixed address RFC 9728 section 3.1 derives for /mcp", "the metadata"),
	discovery("/.well-known/oauth-authorization-server", "OAuth_Metadata", "OAuth",
		"OAuth authorization server metadata (RFC 8414)", "the metadata"),
	{
		Method: "POST", Path: "/oauth/register", OperationID: "OAuth_Register", Tag: "OAuth",
		Summary:  "Dynamic registration of a public client (RFC 7591; no secret, PKCE S256 at authorize)",
		Consumes: "application/json",
		Responses: map[string]string{
			"201": "the client information (RFC 7591 section 3.2.1)",
			"400": "an RFC 7591 section 3.2.2 error",
		},
	},
	signIn("GET", "/oauth/authorize", "OAuth_Authorize",
		"Authorization request: signs the user in through the identity provider, then shows the consent page",
		map[string]string{"200": "the consent page", "302": "to the sign-in bridge or back to the client"}),
	{
		Method: "POST", Path: "/oauth/authorize", OperationID: "OAuth_AuthorizeConsent", Tag: "OAuth",
		Summary:   "The consent form's answer: issues the code (or access_denied) to the client's redirect URI",
		Consumes:  "application/x-www-form-urlencoded",
		Produces:  "text/html",
		Responses: map[string]string{"302": "to the client's redirect URI"},
	},
	{
		Method: "POST", Path: "/oauth/token", OperationID: "OAuth_Token", Tag: "OAuth",
		Summary:  "Token endpoint: authorization code (PKCE verifier required) and refresh token grants",
		Consumes: "application/x-www-form-urlencoded",
		Responses: map[string]string{
			"200": "the access token; it acts as the user's workspace agent key",
			"400": "an RFC 6749 section 5.2 error",
		},
	},
	signIn("GET", "/oauth/login", "OAuth_Login", "Starts the identity-provider sign-in bridge (OpenID Connect with PKCE)",
		map[string]string{"302": "to the identity provider", "503": "no identity provider is configured"}),
	signIn("GET", "/oauth/callback", "OAuth_Callback", "Where the identity provider returns the browser",
		map[string]string{"302": "back to the authorize request", "400": "a refused sign-in"}),
}...)

// discovery documents a public JSON document that clients fetch to find their way (the MCP server
// card, RFC 8414 and RFC 9728 metadata).
func discovery(path, operationID, tag, summary, answer string) apidoc.Route {
	return apidoc.Route{Method: "GET", Path: path, OperationID: operationID, Tag: tag, Summary: summary,
		Responses: map[string]string{"200": answer}}
}

// signIn documents a route of the OAuth sign-in that a browser follows: it answers a page or a
// redirect.
func signIn(method, path, operationID, summary string, responses map[string]string) apidoc.Route {
	return apidoc.Route{Method: method, Path: path, OperationID: operationID, Tag: "OAuth", Summary: summary,
		Produces: "text/html", Responses: responses}
}
