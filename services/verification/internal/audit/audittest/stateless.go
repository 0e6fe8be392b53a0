package audittest

import (
	"net/http"
	"strconv"
)

// The stateless 2026-07-28 half of the raw fixtures (Stateless, Dual). Every request carries its
// protocol version and client capabilities in params._meta and mirrors its method (and, for
// tools/call, prompts/get and resources/read, its name) in the Mcp-Method (Mcp-Name) header and its
// version in MCP-Protocol-Version. Checks run in this order, so that each refusal is the one an
// auditor's probe expects: the _meta version (-32022, HTTP 400), then the standard headers
// (-32020, HTTP 400), then the client capabilities (-32602, HTTP 400). An unknown method is -32601
// with HTTP 404, as SEP-2575 pairs them; results carry resultType "complete", the cache fields of
// the list results, and the server's identity in _meta.

// cacheTTL is the ttlMs the fixtures advertise on discover and list results.
const cacheTTL = 300000

// statelessVersions is what the stateless half accepts in _meta, and what its -32022 lists: a
// client retrying the refused request can only use these. Dual's discover lists 2025-11-25 as well,
// since the server as a whole speaks it (through initialize, not through _meta).
var statelessVersions = []string{version2026}

func (s *raw) stateless(w http.ResponseWriter, r *http.Request, m *message) {
	if !m.isRequest() {
		// Notifications (notifications/cancelled) and stray responses: accepted, nothing to say.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if m.Method == "initialize" {
		requested, _ := m.params()["protocolVersion"].(string)
		writeJSON(w, http.StatusBadRequest, failure(m.ID, codeUnsupportedVersion,
			"Unsupported protocol version: this server speaks only the stateless revision",
			map[string]any{"requested": requested, "supported": statelessVersions}))
		return
	}
	version, ok := m.metaVersion()
	if !ok || (version != version2026 && !s.d.statelessAnyVersion) {
		writeJSON(w, http.StatusBadRequest, failure(m.ID, codeUnsupportedVersion, "Unsupported protocol version",
			map[string]any{"requested": version, "supported": statelessVersions}))
		return
	}
	if !s.d.statelessHeaderIgnored {
		if msg := headerMismatch(r, m, version); msg != "" {
			writeJSON(w, http.StatusBadRequest, failure(m.ID, codeHeaderMismatch, msg, nil))
			return
		}
	}
	if _, ok := m.meta()[metaClientCapabilities].(map[string]any); !ok {
		writeJSON(w, http.StatusBadRequest, failure(m.ID, codeInvalidParams,
			"Invalid params: _meta lacks "+metaClientCapabilities, nil))
		return
	}
	res, errResp, status := s.dispatch2026(m)
	if errResp != nil {
		writeJSON(w, status, *errResp)
		return
	}
	res["resultType"] = "complete"
	res["_meta"] = map[string]any{metaServerInfo: serverInfo()}
	writeJSON(w, http.StatusOK, result(m.ID, res))
}

// headerMismatch says how the standard headers contradict the body, or "" when they agree. A
// missing header is a mismatch too: the revision requires them on every request.
func headerMismatch(r *http.Request, m *message, version string) string {
	if h := r.Header.Get(headerProtocol); h != version {
		return "Header mismatch: MCP-Protocol-Version " + strconv.Quote(h) + " but _meta says " + strconv.Quote(version)
	}
	if h := r.Header.Get(headerMethod); h != m.Method {
		return "Header mismatch: Mcp-Method " + strconv.Quote(h) + " but the body's method is " + strconv.Quote(m.Method)
	}
	key := ""
	switch m.Method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	}
	if key != "" {
		name, _ := m.params()[key].(string)
		if h := r.Header.Get(headerName); h != name {
			return "Header mismatch: Mcp-Name " + strconv.Quote(h) + " but the body names " + strconv.Quote(name)
		}
	}
	return ""
}

// dispatch2026 answers a validated stateless request: a result to complete, or an error response
// with its HTTP status.
func (s *raw) dispatch2026(m *message) (map[string]any, *response, int) {
	switch m.Method {
	case "server/discover":
		versions := statelessVersions
		if s.era2025 {
			versions = []string{version2026, version2025}
		}
		return map[string]any{
			"supportedVersions": versions,
			"capabilities":      map[string]any{"tools": map[string]any{"listChanged": false}},
			"instructions":      Instructions,
			"cacheScope":        "public",
			"ttlMs":             cacheTTL,
		}, nil, 0
	case "tools/list":
		page, next, ok := s.page(m)
		if !ok {
			f := failure(m.ID, codeInvalidParams, "Invalid params: unknown cursor", nil)
			return nil, &f, http.StatusBadRequest
		}
		res := map[string]any{"tools": page, "cacheScope": "public", "ttlMs": cacheTTL}
		if next != "" {
			res["nextCursor"] = next
		}
		return res, nil, 0
	case "tools/call":
		res, ok := s.call(m)
		if !ok {
			name, _ := m.params()["name"].(string)
			f := failure(m.ID, codeInvalidParams, "Unknown tool: "+name, nil)
			return nil, &f, http.StatusBadRequest
		}
		return res, nil, 0
	}
	f := failure(m.ID, codeMethodNotFound, "Method not found: "+m.Method, nil)
	return nil, &f, http.StatusNotFound
}
