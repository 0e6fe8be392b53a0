package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMCPTransportRules checks the Streamable HTTP rules the endpoint enforces in front of the SDK:
// a foreign Origin, malformed JSON, a batch, a request without its session and an unknown method each
// get the transport's answer.
func TestMCPTransportRules(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"SCORING_PUBLIC_URL": "https://scoring.example.com"})
	post := func(body string, header map[string]string) (int, map[string]any, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m, resp.Header.Get("Mcp-Session-Id")
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	status, _, session := post(initialize, nil)
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", status, session)
	}
	inSession := map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
	code := func(m map[string]any) any {
		e, _ := m["error"].(map[string]any)
		return e["code"]
	}
	for _, tc := range []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   any
		id     any
	}{
		{"foreign origin", initialize, map[string]string{"Origin": "https://evil.example"}, 403, nil, nil},
		{"own origin", initialize, map[string]string{"Origin": "https://scoring.example.com"}, 200, nil, 1.0},
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, inSession, 400, -32700.0, nil},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, inSession, 400, -32600.0, nil},
		{"no session", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, nil, 400, -32600.0, 3.0},
		{"unknown method", `{"jsonrpc":"2.0","id":"x","method":"nope/nothing"}`, inSession, 200, -32601.0, "x"},
		{"a method the SDK answers though undeclared", `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, inSession, 200, nil, 4.0},
		{"known method", `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, inSession, 200, nil, 5.0},
	} {
		status, m, _ := post(tc.body, tc.header)
		if status != tc.status || code(m) != tc.code || (tc.id != nil && m["id"] != tc.id) {
			t.Errorf("%s: %d %v, want %d code %v id %v", tc.name, status, m, tc.status, tc.code, tc.id)
		}
	}
}
