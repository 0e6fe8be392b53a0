package mcp

import (
	"strings"
	"testing"
)

func TestNeedsCredential(t *testing.T) {
	t.Parallel()
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"score_workflow","arguments":{}}}`
	for _, tt := range []struct {
		name, body string
		want       bool
	}{
		{"tools/call of score_workflow", call, true},
		{"with whitespace around", "\n  " + call + "\t", true},
		{"in a batch", `[{"jsonrpc":"2.0","method":"notifications/initialized"},` + call + `]`, true},
		{"tools/call of a tool the server does not have", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text"}}`, false},
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`, false},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{"prompts/list", `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`, false},
		{"a notification named like the call", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"score_workflow"}}`, true},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["score_workflow"]}`, false},
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":"tools/call"`, false},
		{"malformed batch", `[` + call, false},
		{"empty", ``, false},
	} {
		if got := NeedsCredential([]byte(tt.body)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzNeedsCredential: the peek reads untrusted bodies; it must never panic, and a body it says needs
// no credential must not name the keyed tool in a well-formed call (checked on the seeds' shapes).
func FuzzNeedsCredential(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"score_workflow","arguments":{"workflow":"healthcare.denial","payload":{}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"score_workflow"}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"other"}}`,
		`[]`, `{}`, `null`, `"tools/call"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := NeedsCredential(body)
		if got && !strings.Contains(string(body), "tools/call") {
			t.Fatalf("NeedsCredential(%q) = true without a tools/call", body)
		}
	})
}
