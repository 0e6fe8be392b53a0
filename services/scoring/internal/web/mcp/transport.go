package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// methods are the JSON-RPC methods the endpoint answers: the server's capabilities (tools, prompts
// and the completion of prompt arguments) and the base protocol. Notifications are listed too: an
// unknown one is dropped with 202. resources/list, resources/templates/list and logging/setLevel
// belong to capabilities the server does not declare, but the SDK answers them (an empty list, an
// empty result) and the official conformance suite calls them whatever a server declares, so they
// pass.
var methods = map[string]bool{
	"initialize": true, "ping": true,
	"tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"completion/complete": true, "resources/list": true, "resources/templates/list": true, "logging/setLevel": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// transportRules apply the Streamable HTTP transport's rules that SDK v1.8.0 leaves to its user or
// answers otherwise, before the SDK sees a request (an MCP audit checks each of them); a call that
// needs a credential is refused by the guard before these rules:
//
//   - a foreign Origin is refused with 403, on every method: the transport requires it against DNS
//     rebinding (a request without Origin is a non-browser client, and passes);
//   - malformed JSON and batches are answered with the JSON-RPC errors -32700 and -32600 (400),
//     where the SDK writes plain text;
//   - a request other than initialize without Mcp-Session-Id is refused with 400, where the SDK
//     would open a new session and answer with an error of code 0;
//   - a method the server does not offer is answered -32601 with the request's id, where the SDK
//     answers 400 in plain text.
func (h *Handler) transportRules(next http.Handler) http.Handler {
	own, _ := url.Parse(h.cfg.PublicURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r, own) {
			gateway.WriteJSON(w, http.StatusForbidden, map[string]any{"detail": "Forbidden: requests from another origin are refused"})
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := readBodyOrRefuse(w, r)
		if !ok {
			return
		}
		body = bytes.TrimSpace(body)
		if !json.Valid(body) {
			rpcError(w, http.StatusBadRequest, nil, -32700, "Parse error: the body is not valid JSON")
			return
		}
		if len(body) > 0 && body[0] == '[' {
			rpcError(w, http.StatusBadRequest, nil, -32600, "Invalid Request: JSON-RPC batches are not supported")
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method == "" || msg.Method == "initialize" {
			next.ServeHTTP(w, r) // responses, and the handshake: the SDK's
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" && !stateless(body) {
			rpcError(w, http.StatusBadRequest, msg.ID, -32600, "Bad Request: the Mcp-Session-Id header is required")
			return
		}
		if !methods[msg.Method] {
			if len(msg.ID) == 0 {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			rpcError(w, http.StatusOK, msg.ID, -32601, "Method not found: "+msg.Method)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// stateless reports whether a request names its protocol version in params._meta, as requests of
// the 2026-07-28 revision do: the SDK refuses that revision with -32022 and the versions it speaks,
// which is the answer a client of that revision needs, so it passes without a session.
func stateless(body []byte) bool {
	var m struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &m)
	_, ok := m.Params.Meta["io.modelcontextprotocol/protocolVersion"]
	return ok
}

// sameOrigin reports whether r's Origin, if any, is the service's public origin (SCORING_PUBLIC_URL).
// The Host the request names is no proof: after DNS rebinding, the attacker's page sends its own
// name as both Origin and Host.
func sameOrigin(r *http.Request, own *url.URL) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && own != nil && strings.EqualFold(u.Scheme, own.Scheme) && strings.EqualFold(u.Host, own.Host)
}

// rpcError writes a JSON-RPC error answer.
func rpcError(w http.ResponseWriter, status int, id json.RawMessage, code int, message string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	gateway.WriteJSON(w, status, map[string]any{
		"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message},
	})
}
