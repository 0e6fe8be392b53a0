package audittest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The raw fixtures: a hand-written Streamable HTTP server, so that each defect is one switch away
// from correct behaviour (the SDK cannot be made to misbehave on purpose). raw speaks 2025-11-25
// with sessions; with era2026 it also speaks the stateless 2026-07-28 revision (Dual), and with
// only2026 it speaks nothing else (Stateless). A 2025-only raw server refuses a 2026 request the
// way the SDK's stateful handler does: 400 with -32022 listing the versions it speaks.

// defects switches one deviation each; the zero value is a correct server.
type defects struct {
	notification200        bool          // notifications/initialized answered 200 with a JSON body
	sessionID              func() string // issues these session ids instead of good ones
	acceptMissingSession   bool          // serves requests that lack Mcp-Session-Id
	acceptUnknownSession   bool          // serves requests whose session id was never issued
	deleteIgnored          bool          // DELETE answers 200 and the session lives on
	getStream500           bool          // GET answers 500
	versionEcho            bool          // initialize echoes any requested protocolVersion
	noServerInfo           bool          // InitializeResult without serverInfo
	cursorLoop             bool          // every tools/list page names the same nextCursor
	promptsDeclaredMissing bool          // declares prompts, answers prompts/list -32601
	undeclaredPrompts      bool          // declares no prompts, answers prompts/list with a result
	pingError              bool          // ping answers a JSON-RPC error
	unknownMethodCode      int           // code for an unknown method instead of -32601
	errorIDNull            bool          // the unknown-method error carries "id": null
	malformed500           bool          // invalid JSON answered 500 text/plain
	batchAccepted          bool          // a batch is processed and answered with an array
	originIgnored          bool          // a foreign Origin is served
	unknownTool500         bool          // tools/call of an unknown tool answered HTTP 500
	invalidToolEntry       bool          // a tools/list entry that violates the schema
	card                   cardKind      // the server card served

	tools []tool // the tools listed; nil: goodTools()

	// The stateless half (Dual and Stateless only).
	statelessAnyVersion    bool // any _meta protocolVersion is served
	statelessHeaderIgnored bool // Mcp-Method, Mcp-Name and MCP-Protocol-Version are not compared
}

// raw is one raw fixture's state.
type raw struct {
	d        defects
	tools    []tool
	era2025  bool
	era2026  bool
	pageSize int

	mu       sync.Mutex
	sessions map[string]*session // live sessions
	ended    map[string]bool     // ids ended by DELETE, answered 404 even where unknown ids are served
}

// session is a 2025 session.
type session struct {
	done chan struct{} // closed by DELETE, ending the session's GET streams
}

// rawPageSize is how many tools a raw tools/list page holds: the three good tools fit on one page,
// many-tools' 45 take three.
const rawPageSize = 20

func newRaw(d defects, era2025, era2026 bool) *raw {
	tools := d.tools
	if tools == nil {
		tools = goodTools()
	}
	return &raw{
		d: d, tools: tools, era2025: era2025, era2026: era2026, pageSize: rawPageSize,
		sessions: map[string]*session{}, ended: map[string]bool{},
	}
}

// rawHandler is a raw fixture behind site.
func rawHandler(d defects, era2025, era2026 bool) http.Handler {
	return site{endpoint: newRaw(d, era2025, era2026), card: d.card, originIgnored: d.originIgnored}
}

// Stateless speaks only 2026-07-28: server/discover, tools/list and tools/call with _meta and the
// standard headers, no sessions, no GET stream (405), no ping. A 2025 initialize is answered 400
// with -32022 and supported ["2026-07-28"], which an auditor reads as a clean "not supported".
func Stateless() http.Handler { return rawHandler(defects{}, false, true) }

// Dual speaks both revisions at one endpoint: initialize starts a 2025-11-25 session; a request
// carrying a protocol version in params._meta, an Mcp-Method header, an MCP-Protocol-Version of
// 2026-07-28 or server/discover is served statelessly.
func Dual() http.Handler { return rawHandler(defects{}, true, true) }

func (s *raw) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost:
		s.post(w, r)
	case r.Method == http.MethodGet && s.era2025:
		s.get(w, r)
	case r.Method == http.MethodDelete && s.era2025:
		s.delete(w, r)
	default:
		allow := "POST"
		if s.era2025 {
			allow = "GET, POST, DELETE"
		}
		w.Header().Set("Allow", allow)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func (s *raw) post(w http.ResponseWriter, r *http.Request) {
	if mediaType(r.Header.Get("Content-Type")) != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		http.Error(w, "Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	if !json.Valid(body) {
		if s.d.malformed500 {
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
		writeJSON(w, http.StatusBadRequest, failure(nil, codeParseError, "Parse error: the body is not valid JSON", nil))
		return
	}
	if isBatch(body) {
		if s.d.batchAccepted {
			s.batch(w, r, body)
			return
		}
		writeJSON(w, http.StatusBadRequest, failure(nil, codeInvalidRequest, "JSON-RPC batches are not supported", nil))
		return
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil || !m.valid() {
		var id json.RawMessage
		if m.hasID() {
			id = m.ID
		}
		writeJSON(w, http.StatusBadRequest, failure(id, codeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message", nil))
		return
	}
	switch {
	case s.era2026 && (!s.era2025 || is2026(r, &m)):
		s.stateless(w, r, &m)
	case is2026(r, &m):
		// A 2025-only server meeting the stateless revision: refused as the SDK refuses it.
		writeJSON(w, http.StatusBadRequest, failure(m.ID, codeUnsupportedVersion, "Unsupported protocol version",
			map[string]any{"requested": requestedVersion(r, &m), "supported": versions2025}))
	default:
		s.post2025(w, r, &m)
	}
}

// requestedVersion is the version a 2026 request asked for: _meta's, else the header's.
func requestedVersion(r *http.Request, m *message) string {
	if v, ok := m.metaVersion(); ok {
		return v
	}
	return r.Header.Get(headerProtocol)
}

// post2025 serves one 2025-11-25 message.
func (s *raw) post2025(w http.ResponseWriter, r *http.Request, m *message) {
	if m.Method == "initialize" {
		if !m.isRequest() {
			writeJSON(w, http.StatusBadRequest, failure(nil, codeInvalidRequest, "initialize must be a request", nil))
			return
		}
		s.initialize(w, m)
		return
	}
	var id json.RawMessage
	if m.hasID() {
		id = m.ID
	}
	if _, status, msg := s.session(r); status != 0 {
		code := codeInvalidRequest
		if status == http.StatusNotFound {
			code = codeSessionNotFound
		}
		writeJSON(w, status, failure(id, code, msg, nil))
		return
	}
	if v := r.Header.Get(headerProtocol); v != "" && !slices.Contains(versions2025, v) {
		writeJSON(w, http.StatusBadRequest, failure(id, codeInvalidRequest, "Bad Request: unsupported MCP-Protocol-Version "+strconv.Quote(v), nil))
		return
	}
	switch {
	case m.isNotification():
		if m.Method == "notifications/initialized" && s.d.notification200 {
			writeJSON(w, http.StatusOK, map[string]any{})
			return
		}
		w.WriteHeader(http.StatusAccepted)
	case m.isResponse():
		w.WriteHeader(http.StatusAccepted)
	default:
		resp, status := s.dispatch2025(m)
		writeJSON(w, status, resp)
	}
}

// session finds the request's session; a non-zero status says why it cannot be served.
func (s *raw) session(r *http.Request) (*session, int, string) {
	sid := r.Header.Get(headerSession)
	s.mu.Lock()
	defer s.mu.Unlock()
	if sid == "" {
		if s.d.acceptMissingSession {
			return &session{done: make(chan struct{})}, 0, ""
		}
		return nil, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required"
	}
	if sess, ok := s.sessions[sid]; ok {
		return sess, 0, ""
	}
	if s.d.acceptUnknownSession && !s.ended[sid] {
		return &session{done: make(chan struct{})}, 0, ""
	}
	return nil, http.StatusNotFound, "Session not found"
}

// initialize answers the handshake and opens a session.
func (s *raw) initialize(w http.ResponseWriter, m *message) {
	requested, _ := m.params()["protocolVersion"].(string)
	negotiated := version2025
	if slices.Contains(versions2025, requested) || s.d.versionEcho && requested != "" {
		negotiated = requested
	}
	sid := newSessionID()
	if s.d.sessionID != nil {
		sid = s.d.sessionID()
	}
	s.mu.Lock()
	s.sessions[sid] = &session{done: make(chan struct{})}
	s.mu.Unlock()

	caps := map[string]any{"tools": map[string]any{"listChanged": false}}
	if s.d.promptsDeclaredMissing {
		caps["prompts"] = map[string]any{"listChanged": false}
	}
	res := map[string]any{
		"protocolVersion": negotiated,
		"capabilities":    caps,
		"instructions":    Instructions,
	}
	if !s.d.noServerInfo {
		res["serverInfo"] = serverInfo()
	}
	w.Header().Set(headerSession, sid)
	writeJSON(w, http.StatusOK, result(m.ID, res))
}

func serverInfo() map[string]any {
	return map[string]any{"name": ServerName, "title": ServerTitle, "version": ServerVersion}
}

// newSessionID is 32 hex digits: visible ASCII, unguessable.
func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// undeclared are the methods of capabilities a raw 2025 server never declares: they answer -32601
// whatever unknownMethodCode says, so that a wrong code for unknown methods stays one defect.
var undeclared = map[string]bool{
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
}

// dispatch2025 answers a 2025 request with a response and the HTTP status to send it with.
func (s *raw) dispatch2025(m *message) (response, int) {
	switch m.Method {
	case "ping":
		if s.d.pingError {
			return failure(m.ID, codeInternalError, "ping failed", nil), http.StatusOK
		}
		return result(m.ID, map[string]any{}), http.StatusOK
	case "tools/list":
		page, next, ok := s.page(m)
		if !ok {
			return failure(m.ID, codeInvalidParams, "Invalid params: unknown cursor", nil), http.StatusOK
		}
		res := map[string]any{"tools": page}
		if next != "" {
			res["nextCursor"] = next
		}
		return result(m.ID, res), http.StatusOK
	case "tools/call":
		res, ok := s.call(m)
		if !ok {
			if s.d.unknownTool500 {
				return failure(m.ID, codeInternalError, "internal server error", nil), http.StatusInternalServerError
			}
			name, _ := m.params()["name"].(string)
			return failure(m.ID, codeInvalidParams, "Unknown tool: "+name, nil), http.StatusOK
		}
		return result(m.ID, res), http.StatusOK
	case "prompts/list":
		if s.d.undeclaredPrompts {
			return result(m.ID, map[string]any{"prompts": []any{}}), http.StatusOK
		}
	}
	if undeclared[m.Method] {
		return failure(m.ID, codeMethodNotFound, "Method not found: "+m.Method, nil), http.StatusOK
	}
	id, code := m.ID, codeMethodNotFound
	if s.d.errorIDNull {
		id = json.RawMessage("null")
	}
	if s.d.unknownMethodCode != 0 {
		code = s.d.unknownMethodCode
	}
	return failure(id, code, "Method not found: "+m.Method, nil), http.StatusOK
}

// page is one tools/list page for the request's cursor. Cursors are opaque (base64 of an offset);
// an unknown one is refused.
func (s *raw) page(m *message) (page []any, next string, ok bool) {
	start := 0
	if c, present := m.params()["cursor"]; present {
		cs, _ := c.(string)
		b, err := base64.RawURLEncoding.DecodeString(cs)
		if err != nil {
			return nil, "", false
		}
		n, err := strconv.Atoi(string(b))
		if err != nil || n <= 0 || n >= len(s.tools) {
			return nil, "", false
		}
		start = n
	}
	if s.d.cursorLoop {
		// Every page, whatever the cursor, is the first one and points at the second.
		start = 0
	}
	end := min(start+s.pageSize, len(s.tools))
	for i, t := range s.tools[start:end] {
		if s.d.invalidToolEntry && start+i == 0 {
			page = append(page, invalidEntry(t))
			continue
		}
		page = append(page, t)
	}
	switch {
	case s.d.cursorLoop:
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(min(s.pageSize, len(s.tools)-1))))
	case end < len(s.tools):
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return page, next, true
}

// invalidEntry is t with "icons" a string where the schema wants an array of Icon objects: a
// schema violation that no other check (names, JSON Schema of the input, annotations) looks at.
func invalidEntry(t tool) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(mustJSON(t), &m)
	m["icons"] = "weather.png"
	return m
}

// call runs a known tool with fabricated output; ok is false for an unknown tool.
func (s *raw) call(m *message) (map[string]any, bool) {
	p := m.params()
	name, _ := p["name"].(string)
	i := slices.IndexFunc(s.tools, func(t tool) bool { return t.Name == name })
	if i < 0 {
		return nil, false
	}
	args, _ := p["arguments"].(map[string]any)
	out := s.tools[i].call(args)
	return map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": string(mustJSON(out))}},
		"structuredContent": out,
		"isError":           false,
	}, true
}

// batch answers a batch message by message with an array: batch-accepted's defect.
func (s *raw) batch(w http.ResponseWriter, r *http.Request, body []byte) {
	var msgs []message
	if err := json.Unmarshal(body, &msgs); err != nil {
		writeJSON(w, http.StatusBadRequest, failure(nil, codeInvalidRequest, "Invalid Request", nil))
		return
	}
	if _, status, msg := s.session(r); status != 0 {
		writeJSON(w, status, failure(nil, codeInvalidRequest, msg, nil))
		return
	}
	out := []response{}
	for i := range msgs {
		if msgs[i].isRequest() {
			resp, _ := s.dispatch2025(&msgs[i])
			out = append(out, resp)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// get opens the session's event stream: it sends nothing (the server has nothing to say) but a
// comment every 15 s, and ends when the session ends, the client goes away or the Server closes.
func (s *raw) get(w http.ResponseWriter, r *http.Request) {
	if _, streamOK := accepts(r.Header.Values("Accept")); !streamOK {
		http.Error(w, "Accept must list text/event-stream", http.StatusNotAcceptable)
		return
	}
	sess, status, msg := s.session(r)
	if status != 0 {
		http.Error(w, msg, status)
		return
	}
	if s.d.getStream500 {
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sess.done:
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}

// delete ends a session: 204, then 404 for the id.
func (s *raw) delete(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(headerSession)
	if sid == "" {
		http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	sess, ok := s.sessions[sid]
	switch {
	case !ok:
		s.mu.Unlock()
		http.Error(w, "Session not found", http.StatusNotFound)
		return
	case s.d.deleteIgnored:
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		return
	}
	delete(s.sessions, sid)
	s.ended[sid] = true
	close(sess.done)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
