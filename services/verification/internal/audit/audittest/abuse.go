package audittest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Abuse fixtures: servers that try the auditor's limits rather than its conformance checks.

// StreamForever answers every POST, on any path, 200 text/event-stream and then a comment line
// every 50 ms, forever: it ends only when the client goes away (or the Server closes). Other
// methods are answered 405. An auditor must cut it at its per-response time or byte limit.
func StreamForever() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBody))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, ": still here %d\n\n", i); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
}

// Huge answers initialize with a valid JSON-RPC result of exactly n bytes (at least the size of
// the result without padding), its instructions string padded with 'x': an auditor must stop
// reading at its per-response byte cap. The body is streamed, never held in memory. Notifications
// are answered 202, any other request -32601; the server issues no session.
func Huge(n int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil || !m.valid() {
			writeJSON(w, http.StatusBadRequest, failure(nil, codeInvalidRequest, "Invalid Request", nil))
			return
		}
		switch {
		case !m.isRequest():
			w.WriteHeader(http.StatusAccepted)
			return
		case m.Method != "initialize":
			writeJSON(w, http.StatusOK, failure(m.ID, codeMethodNotFound, "Method not found: "+m.Method, nil))
			return
		}
		head := `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"` + version2025 +
			`","capabilities":{"tools":{}},"serverInfo":` + string(mustJSON(serverInfo())) + `,"instructions":"`
		tail := `"}}`
		pad := max(n-len(head)-len(tail), 0)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(head)+pad+len(tail)))
		w.WriteHeader(http.StatusOK)
		if _, err := io.WriteString(w, head); err != nil {
			return
		}
		chunk := strings.Repeat("x", 32<<10)
		for pad > 0 {
			k := min(pad, len(chunk))
			if _, err := io.WriteString(w, chunk[:k]); err != nil {
				return // the client stopped reading
			}
			pad -= k
		}
		_, _ = io.WriteString(w, tail)
	})
}

// Slow delays every request by d before h serves it; a request whose client gives up (or whose
// Server closes) meanwhile is dropped unanswered.
func Slow(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		h.ServeHTTP(w, r)
	})
}

// Down is the endpoint URL of a server that is not there: a loopback port that was just listened
// on and closed, so a connection to it is refused. (A closed Server's URL is the same thing; like
// any freed port it could in principle be taken again by a later listener.)
func Down() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("audittest: listen on loopback: %v", err))
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "https://" + addr + EndpointPath
}
