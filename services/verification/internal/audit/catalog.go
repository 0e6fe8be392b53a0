package audit

// The two protocol eras an audit probes, named by their protocol revision.
const (
	// EraStateful is the 2025-11-25 revision: initialize handshake, notifications/initialized and an
	// Mcp-Session-Id that the server may issue.
	EraStateful = "2025-11-25"
	// EraStateless is the 2026-07-28 revision: no handshake; server/discover advertises versions and
	// every request carries its protocol version and client capabilities in params._meta, and its
	// method (and name) in the Mcp-Method (and Mcp-Name) headers.
	EraStateless = "2026-07-28"
	// EraNone marks checks of the HTTP surface that no protocol revision owns (OAuth metadata, the
	// server card, TLS).
	EraNone = ""
)

// Spec sections the checks cite.
const (
	specBase2025   = "https://modelcontextprotocol.io/specification/2025-11-25"
	specBase2026   = "https://modelcontextprotocol.io/specification/2026-07-28"
	specLifecycle  = specBase2025 + "/basic/lifecycle"
	specTransport  = specBase2025 + "/basic/transports#streamable-http"
	specSession    = specBase2025 + "/basic/transports#session-management"
	specSecurity   = specBase2025 + "/basic/transports#security-warning"
	specJSONRPC    = specBase2025 + "/basic#messages"
	specTools      = specBase2025 + "/server/tools"
	specToolNames  = specBase2025 + "/server/tools#tool-names"
	specPrompts    = specBase2025 + "/server/prompts"
	specResources  = specBase2025 + "/server/resources"
	specPagination = specBase2025 + "/server/utilities/pagination"
	specPing       = specBase2025 + "/basic/utilities/ping"
	specSchema     = specBase2025 + "/basic#json-schema-usage"
	specAuth       = specBase2025 + "/basic/authorization"
	specDiscover   = specBase2026 + "/basic/lifecycle"
	specHeaders    = specBase2026 + "/basic/transports#standard-headers"
	specServerCard = "https://modelcontextprotocol.io/specification/draft/server/server-card"
	specRFC9728    = "https://www.rfc-editor.org/rfc/rfc9728"
	specRFC8414    = "https://www.rfc-editor.org/rfc/rfc8414"
)

// CheckDef is one entry of the check catalog: what a check is called and which spec section it
// enforces. IDs that the official MCP conformance suite also uses (server-initialize, ping,
// tools-list, prompts-list, resources-list, json-schema-2020-12) keep the suite's id so that the two
// reports can be compared; the others are this auditor's own.
type CheckDef struct {
	ID            string
	Name          string
	Era           string
	SpecReference string
}

// Catalog lists every check an MCP audit reports, in report order. A report holds exactly one result
// per entry: a check that could not run says why in a SKIPPED result.
var Catalog = []CheckDef{
	// 2025-11-25: the stateful handshake.
	{"server-initialize", "initialize answers a valid InitializeResult", EraStateful, specLifecycle + "#initialization"},
	{"version-negotiation", "an unknown protocol version is counter-offered or refused with the supported list", EraStateful, specLifecycle + "#version-negotiation"},
	{"notification-accepted", "a notification is answered 202 Accepted without a body", EraStateful, specTransport},
	{"session-id-format", "Mcp-Session-Id holds only visible ASCII", EraStateful, specSession},
	{"session-missing-400", "a request without the session id is refused with 400", EraStateful, specSession},
	{"session-unknown-404", "a request with an unknown session id is answered 404", EraStateful, specSession},
	{"session-delete", "DELETE ends the session (or is refused with 405)", EraStateful, specSession},
	{"get-stream", "GET is answered 405 or with a text/event-stream", EraStateful, specTransport + "#listening-for-messages-from-the-server"},
	{"tools-list", "tools/list answers a valid ListToolsResult", EraStateful, specTools + "#listing-tools"},
	{"tool-name-format", "tool names are 1-128 characters of A-Z a-z 0-9 _ - .", EraStateful, specToolNames},
	{"tools-list-pagination", "tools/list cursors advance and end", EraStateful, specPagination},
	{"json-schema-2020-12", "tool input and output schemas are JSON Schema 2020-12 objects", EraStateful, specSchema},
	{"prompts-list", "prompts/list answers a valid ListPromptsResult", EraStateful, specPrompts + "#listing-prompts"},
	{"resources-list", "resources/list answers a valid ListResourcesResult", EraStateful, specResources + "#listing-resources"},
	{"resources-templates-list", "resources/templates/list answers a valid ListResourceTemplatesResult", EraStateful, specResources + "#resource-templates"},
	{"undeclared-capability", "methods of capabilities the server does not declare answer -32601", EraStateful, specLifecycle + "#capability-negotiation"},
	{"ping", "ping answers an empty result", EraStateful, specPing},
	{"unknown-method", "an unknown method answers -32601 with the request's id", EraStateful, specJSONRPC},
	{"malformed-json", "malformed JSON answers -32700", EraStateful, specJSONRPC},
	{"batch-refused", "a JSON-RPC batch (array) is refused", EraStateful, specTransport + "#sending-messages-to-the-server"},
	{"unknown-tool-error", "tools/call of a tool that does not exist answers a JSON-RPC or tool error, not an HTTP 5xx", EraStateful, specTools + "#error-handling"},
	{"origin-rejected", "a request from a foreign Origin is refused with 403 (DNS rebinding)", EraStateful, specSecurity},
	{"message-schema", "every message validates against the 2025-11-25 schema", EraStateful, specSchema},
	// 2026-07-28: the stateless era.
	{"server-discover", "server/discover answers a valid DiscoverResult", EraStateless, specDiscover},
	{"stateless-tools-list", "tools/list without a session, with _meta and Mcp-Method, answers a valid ListToolsResult", EraStateless, specHeaders},
	{"unsupported-version", "an unknown protocol version in _meta answers 400 with -32022 and the supported list", EraStateless, specDiscover},
	{"header-mismatch", "an Mcp-Method header that contradicts the body answers 400 with -32020", EraStateless, specHeaders},
	{"stateless-message-schema", "every message validates against the 2026-07-28 schema", EraStateless, specSchema},
	// Outside the protocol revisions.
	{"oauth-protected-resource", "a protected server's 401 names RFC 9728 metadata whose resource is this URL", EraNone, specRFC9728},
	{"oauth-authorization-server", "the authorization server publishes RFC 8414 metadata with PKCE S256", EraNone, specRFC8414},
	{"server-card", "the server card, when published, is valid JSON naming the server", EraNone, specServerCard},
}

// catalogIndex finds a catalog entry by id.
func catalogIndex(id string) (CheckDef, bool) {
	for _, d := range Catalog {
		if d.ID == id {
			return d, true
		}
	}
	return CheckDef{}, false
}
