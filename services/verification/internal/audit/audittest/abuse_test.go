package audittest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitIdle waits until s handles no request.
func waitIdle(t *testing.T, s *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.InFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still in flight", s.InFlight())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStreamForever(t *testing.T) {
	s := serve(t, StreamForever())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := fixtureCA.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("HTTP %d %s", resp.StatusCode, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	comments := 0
	start := time.Now()
	for comments < 4 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), ":") {
			comments++
		}
	}
	if comments < 4 || time.Since(start) < 100*time.Millisecond {
		t.Errorf("%d comments in %v", comments, time.Since(start))
	}
	if s.InFlight() != 1 {
		t.Errorf("in flight %d while streaming", s.InFlight())
	}
	cancel()
	resp.Body.Close()
	waitIdle(t, s)
}

func TestHuge(t *testing.T) {
	const n = 3 << 20
	s := serve(t, Huge(n))
	c := newClient(t, fixtureCA, s.URL, "")
	r := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, nil)
	if r.status != http.StatusOK || len(r.body) != n {
		t.Fatalf("HTTP %d, %d bytes, want %d", r.status, len(r.body), n)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if err := validateSchema(version2025, "InitializeResult", m["result"]); err != nil {
		t.Errorf("result: %v", err)
	}

	// A client that stops reading frees the handler.
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"initialize"}`))
	resp, err := fixtureCA.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 64<<10); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitIdle(t, s)
}

func TestSlow(t *testing.T) {
	s := serve(t, Slow(300*time.Millisecond, Correct()))
	c := newClient(t, fixtureCA, s.URL, "")
	start := time.Now()
	if _, r := c.session2025(); r.status != http.StatusOK {
		t.Fatalf("initialize: %s", r)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("initialize answered after %v", d)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Origin+ServerCardPath, nil)
	if _, err := fixtureCA.Client().Do(req); err == nil {
		t.Error("a request given up after 50 ms was answered")
	}
	waitIdle(t, s)
}
