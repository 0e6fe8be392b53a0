package audittest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sync"
)

// Paths a fixture serves besides its endpoint.
const (
	EndpointPath   = "/mcp"
	ServerCardPath = "/.well-known/mcp/server-card.json"
	hsts           = "max-age=63072000; includeSubDomains"
)

// site serves a fixture's whole origin: the MCP endpoint at /mcp, the server card, 404 elsewhere.
// Every answer carries Strict-Transport-Security (a readiness rule looks for it), and the
// endpoint refuses a foreign Origin with 403 on every method, as the 2025-11-25 transport's
// security warning requires against DNS rebinding (absent Origin: a non-browser client, allowed;
// same origin: allowed).
type site struct {
	endpoint      http.Handler
	card          cardKind
	originIgnored bool
}

type cardKind int

const (
	cardValid cardKind = iota
	cardNone
	cardInvalid
)

func (s site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Strict-Transport-Security", hsts)
	switch r.URL.Path {
	case EndpointPath:
		if !s.originIgnored && !sameOrigin(r) {
			http.Error(w, "Forbidden: foreign Origin "+r.Header.Get("Origin"), http.StatusForbidden)
			return
		}
		s.endpoint.ServeHTTP(w, r)
	case ServerCardPath:
		switch s.card {
		case cardValid:
			writeJSON(w, http.StatusOK, serverCard("https://"+r.Host))
		case cardInvalid:
			// Truncated JSON, served as if it were fine.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name": "` + ServerName + `", "version": `))
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// sameOrigin reports whether the request's Origin, if any, is this server's own https origin.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Scheme == "https" && u.Host == r.Host && u.Path == "" && u.User == nil
}

// serverCard is the fixture's server card in the SEP-2127 shape (the draft server-card schema):
// a reverse-DNS name, the version, a title, a description and the streamable-http remote.
func serverCard(origin string) map[string]any {
	return map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
		"name":        "io.github.trustlayer/" + ServerName,
		"version":     ServerVersion,
		"title":       ServerTitle,
		"description": "Weather forecasts and weather station listings for cities, served for tests.",
		"remotes":     []any{map[string]any{"type": "streamable-http", "url": origin + EndpointPath}},
	}
}

// sdkFront stands before the SDK's StreamableHTTPHandler and does what SDK v1.8.0 leaves to its
// user or does otherwise than the audit expects of a correct server (each seen on the wire, see
// the package tests):
//
//   - a request without Mcp-Session-Id after the handshake opens a fresh SDK session and is
//     answered 200 with a JSON-RPC error of code 0; front answers 400, as the transport says;
//   - malformed JSON, a batch and an unknown method are answered 400 text/plain; front answers
//     -32700 (400), -32600 (400) and -32601 with the request's id (200);
//   - methods of capabilities the server does not declare (prompts/list on a tools-only server,
//     logging/setLevel) are answered with empty results; front answers -32601.
//
// Origin validation and HSTS are site's. To answer -32601 only inside a live session (an unknown
// session must still get the SDK's 404), front learns the session ids from the SDK's initialize
// answers and forgets them when a DELETE succeeds.
type sdkFront struct {
	next    http.Handler
	methods map[string]bool

	mu       sync.Mutex
	sessions map[string]bool
}

func newSDKFront(next http.Handler, methods map[string]bool) *sdkFront {
	return &sdkFront{next: next, methods: methods, sessions: map[string]bool{}}
}

func (f *sdkFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		f.post(w, r)
	case http.MethodDelete:
		sid := r.Header.Get(headerSession)
		f.next.ServeHTTP(&watchWriter{ResponseWriter: w, onHeader: func(status int) {
			if status/100 == 2 {
				f.forget(sid)
			}
		}}, r)
	default:
		f.next.ServeHTTP(w, r)
	}
}

func (f *sdkFront) post(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	r.Body = readCloser{bytes.NewReader(body)}
	if !json.Valid(body) {
		writeJSON(w, http.StatusBadRequest, failure(nil, codeParseError, "Parse error: the body is not valid JSON", nil))
		return
	}
	if isBatch(body) {
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
	case is2026(r, &m):
		// The SDK refuses the stateless revision on a stateful handler with -32022 listing the
		// versions it speaks: the clean refusal wanted.
		f.next.ServeHTTP(w, r)
		return
	case m.Method == "initialize":
		f.next.ServeHTTP(&watchWriter{ResponseWriter: w, onHeader: func(int) {
			if sid := w.Header().Get(headerSession); sid != "" {
				f.remember(sid)
			}
		}}, r)
		return
	}
	sid := r.Header.Get(headerSession)
	if sid == "" {
		var id json.RawMessage
		if m.hasID() {
			id = m.ID
		}
		writeJSON(w, http.StatusBadRequest, failure(id, codeInvalidRequest, "Bad Request: Mcp-Session-Id header is required", nil))
		return
	}
	if v := r.Header.Get(headerProtocol); m.isRequest() && f.known(sid) && !f.methods[m.Method] &&
		(v == "" || slices.Contains(versions2025, v)) {
		writeJSON(w, http.StatusOK, failure(m.ID, codeMethodNotFound, "Method not found: "+m.Method, nil))
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *sdkFront) remember(sid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sessions[sid] = true
}

func (f *sdkFront) forget(sid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, sid)
}

func (f *sdkFront) known(sid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[sid]
}

// readCloser gives a bytes.Reader a no-op Close, to put a read body back on a request.
type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// watchWriter calls onHeader once, with the status, just before the header is written; it passes
// Flush through, since the SDK streams its answers.
type watchWriter struct {
	http.ResponseWriter
	onHeader func(status int)
	wrote    bool
}

func (w *watchWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		w.onHeader(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *watchWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *watchWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *watchWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
