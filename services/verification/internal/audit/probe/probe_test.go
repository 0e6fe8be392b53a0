package probe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMessages(t *testing.T) {
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	js := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name   string
		header http.Header
		body   string
		want   []string
		bad    bool
	}{
		{"one JSON message", js, `{"jsonrpc":"2.0","id":1,"result":{}}`, []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}, false},
		{"an array", js, ` [{"id":1},{"id":2}] `, []string{`{"id":1}`, `{"id":2}`}, false},
		{"empty", js, "  ", nil, false},
		{"not JSON", js, "oops", nil, true},
		{"events", sse, "event: message\ndata: {\"id\":1}\n\n: comment\n\ndata: {\"id\":2}\n\n", []string{`{"id":1}`, `{"id":2}`}, false},
		{"CRLF and a last event without blank line", sse, "data: {\"id\":1}\r\n\r\ndata: {\"id\":2}", []string{`{"id":1}`, `{"id":2}`}, false},
		{"multi-line data", sse, "data: {\"id\":\ndata: 3}\n\n", []string{"{\"id\":\n3}"}, false},
		{"an event that is not JSON", sse, "data: nope\n\ndata: {}\n\n", []string{`{}`}, true},
	} {
		msgs, bad := Messages(tc.header, []byte(tc.body))
		var got []string
		for _, m := range msgs {
			got = append(got, string(m))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || bad != tc.bad {
			t.Errorf("%s: got %q bad=%v, want %q bad=%v", tc.name, got, bad, tc.want, tc.bad)
		}
	}
}

func FuzzMessages(f *testing.F) {
	f.Add("text/event-stream", []byte("data: {\"id\":1}\n\n"))
	f.Add("application/json", []byte(`[{"id":1},{"id":2}]`))
	f.Add("text/event-stream", []byte("data:\ndata:\n\n\n"))
	f.Add("application/json", []byte(`{"jsonrpc":"2.0"`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		msgs, _ := Messages(http.Header{"Content-Type": {contentType}}, body)
		for _, m := range msgs {
			if !json.Valid(m) {
				t.Fatalf("a message that is not JSON: %q", m)
			}
		}
		// The reader of a live stream agrees with the parser of a whole one: it never reads past the
		// input, whatever the id.
		if raw, _ := readEventsUntil(strings.NewReader(string(body)), "1"); len(raw) > len(body) {
			t.Fatalf("read %d bytes of %d", len(raw), len(body))
		}
	})
}

func TestReadEventsUntilStopsAtTheReply(t *testing.T) {
	// A stream that stays open after the reply, as a server may keep it: the reader must return at
	// the reply, not wait for the stream's end.
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = io.WriteString(pw, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n")
		_, _ = io.WriteString(pw, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n")
	}()
	got := make(chan []byte, 1)
	go func() {
		raw, _ := readEventsUntil(pr, "7")
		got <- raw
	}()
	select {
	case raw := <-got:
		if !strings.Contains(string(raw), `"id":7`) {
			t.Fatalf("read %q, want the reply to 7", raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader waited for the end of a stream that answered")
	}
}

func TestClientLimits(t *testing.T) {
	var inFlight, peak atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("x", 5000))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		case "/echo":
			_, _ = io.WriteString(w, "you sent "+r.Header.Get("Authorization"))
		}
	}))
	defer srv.Close()
	c := New(http.DefaultTransport, http.Header{"Authorization": {"Bearer s3cr3t-token"}}, Limits{MaxRequests: 6, MaxConcurrent: 2, MaxResponseBytes: 1000, RequestTimeout: time.Second})

	big, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: srv.URL + "/big"})
	if err != nil || !big.Truncated || len(big.Body) != 1000 {
		t.Fatalf("big: %v, truncated %v, %d bytes; want 1000 bytes, truncated", err, big.Truncated, len(big.Body))
	}
	redirect, _ := c.Do(context.Background(), Request{Method: http.MethodGet, URL: srv.URL + "/redirect"})
	if redirect.Status != http.StatusFound {
		t.Errorf("a redirect was followed: %d", redirect.Status)
	}
	echo, _ := c.Do(context.Background(), Request{Method: http.MethodGet, URL: srv.URL + "/echo"})
	if got := c.Redact(string(echo.Body)); strings.Contains(got, "s3cr3t") || !strings.Contains(got, "[redacted]") {
		t.Errorf("Redact(%q) = %q", echo.Body, got)
	}
	if doc := string(c.RedactJSON([]byte(`{"name":"Bearer s3cr3t-token"}`))); strings.Contains(doc, "s3cr3t") {
		t.Errorf("RedactJSON left the secret: %s", doc)
	}
	done := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: srv.URL + "/"})
			done <- err
		}()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("%d requests in flight, want at most 2", p)
	}
	if _, err := c.Do(context.Background(), Request{Method: http.MethodGet, URL: srv.URL + "/"}); !errors.Is(err, ErrBudget) {
		t.Errorf("the 7th request: %v, want ErrBudget", err)
	}
	if s := c.Stats(); s.Requests != 6 || s.Truncated != 1 || s.MaxRequests != 6 {
		t.Errorf("stats %+v", s)
	}
}
