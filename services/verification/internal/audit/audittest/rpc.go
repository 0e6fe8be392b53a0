package audittest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
)

// JSON-RPC and MCP error codes the fixtures answer with.
const (
	codeParseError         = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternalError      = -32603
	codeSessionNotFound    = -32001 // the TypeScript SDK's code for an unknown session, kept for familiarity
	codeHeaderMismatch     = -32020
	codeUnsupportedVersion = -32022
)

// Protocol versions and the 2026-07-28 _meta keys.
const (
	version2025 = "2025-11-25"
	version2026 = "2026-07-28"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"

	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	headerMethod   = "Mcp-Method"
	headerName     = "Mcp-Name"

	// maxBody bounds what a fixture reads of a request.
	maxBody = 1 << 20
)

// versions2025 are the handshake-era versions the raw fixtures negotiate, newest first.
var versions2025 = []string{version2025, "2025-06-18", "2025-03-26"}

// message is one JSON-RPC message as received. ID stays raw so that it is echoed byte for byte;
// a present "id": null decodes as the four bytes null.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// hasID reports whether the message carries a usable id (a string or a number, not null).
func (m *message) hasID() bool {
	if len(m.ID) == 0 {
		return false
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

func (m *message) isRequest() bool      { return m.Method != "" && m.hasID() }
func (m *message) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }
func (m *message) isResponse() bool {
	return m.Method == "" && m.hasID() && (m.Result != nil || m.Error != nil)
}

// valid reports whether m is a well-formed JSON-RPC 2.0 request, notification or response.
func (m *message) valid() bool {
	return m.JSONRPC == "2.0" && (m.isRequest() || m.isNotification() || m.isResponse())
}

// params decodes the params object (absent params decode as empty).
func (m *message) params() map[string]any {
	var p map[string]any
	if len(m.Params) > 0 {
		_ = json.Unmarshal(m.Params, &p)
	}
	if p == nil {
		p = map[string]any{}
	}
	return p
}

// meta is params._meta, or nil.
func (m *message) meta() map[string]any {
	meta, _ := m.params()["_meta"].(map[string]any)
	return meta
}

// metaVersion is params._meta's protocol version, and whether it is present as a string.
func (m *message) metaVersion() (string, bool) {
	v, ok := m.meta()[metaProtocolVersion].(string)
	return v, ok
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// response is a JSON-RPC response. ID is omitted when nil (an error about a message whose id could
// not be read); json.RawMessage("null") writes "id": null, which only a defect does.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func result(id json.RawMessage, res any) response {
	return response{JSONRPC: "2.0", ID: id, Result: res}
}

func failure(id json.RawMessage, code int, msg string, data any) response {
	return response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg, Data: data}}
}

// writeJSON writes v as an application/json body with status. HTML characters stay as they are
// (encoding/json would write < as \u003c), so that a test can grep the wire for "<IMPORTANT>".
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// readBody reads a request body of at most maxBody bytes; it answers 413 itself when the body is
// larger and reports false.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "cannot read request body", http.StatusBadRequest)
		}
		return nil, false
	}
	return body, true
}

// isBatch reports whether body is a JSON array.
func isBatch(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) > 0 && b[0] == '['
}

// mediaType is the base media type of a Content-Type value, lower case.
func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return mt
}

// accepts reports whether the Accept header values admit application/json and text/event-stream.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// is2026 reports whether a request speaks the stateless 2026-07-28 revision: server/discover, a
// protocol version in params._meta, an Mcp-Method header, or an MCP-Protocol-Version header of
// 2026-07-28 or later. initialize never does: it is the 2025 handshake whatever else it carries.
func is2026(r *http.Request, m *message) bool {
	if m.Method == "initialize" {
		return false
	}
	if m.Method == "server/discover" || r.Header.Get(headerMethod) != "" {
		return true
	}
	if _, ok := m.metaVersion(); ok {
		return true
	}
	return r.Header.Get(headerProtocol) >= version2026
}
