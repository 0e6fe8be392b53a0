package mcpschema

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

var (
	loadOnce sync.Once
	loaded   *Set
	loadErr  error
)

func set(tb testing.TB) *Set {
	tb.Helper()
	loadOnce.Do(func() { loaded, loadErr = Load() })
	if loadErr != nil {
		tb.Fatalf("Load: %v", loadErr)
	}
	return loaded
}

const (
	goodTool    = `{"name":"read_file","description":"Reads a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"annotations":{"readOnlyHint":true}}`
	listTail26  = `,"resultType":"complete","cacheScope":"public","ttlMs":60000`
	initialize  = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"files","version":"1.2.0"}}`
	discover    = `{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}},"resultType":"complete","cacheScope":"public","ttlMs":0}`
	errResponse = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown tool: nope"}}`
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name, version, def, msg string
		// wantErr is "" for a valid message, else a substring the error must contain.
		wantErr string
	}{
		{"initialize", V20251125, "InitializeResult", initialize, ""},
		{"initialize without version", V20251125, "InitializeResult",
			`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"files"}}`,
			"InitializeResult: at /serverInfo: missing property 'version'"},
		{"initialize with wrong types", V20251125, "InitializeResult",
			`{"protocolVersion":20251125,"capabilities":[],"serverInfo":{"name":"files","version":"1"}}`,
			"at /protocolVersion: got number, want string"},

		{"tools 2025", V20251125, "ListToolsResult", `{"tools":[` + goodTool + `]}`, ""},
		{"tools 2025 bad entry", V20251125, "ListToolsResult",
			`{"tools":[` + goodTool + `,{"name":"x","inputSchema":{"type":"array"}}]}`,
			"ListToolsResult: at /tools/1/inputSchema/type: value must be 'object'"},
		{"tools 2025 entry without name", V20251125, "ListToolsResult",
			`{"tools":[{"inputSchema":{"type":"object"}}]}`, "at /tools/0: missing property 'name'"},
		{"tools 2026", V20260728, "ListToolsResult", `{"tools":[` + goodTool + `]` + listTail26 + `}`, ""},
		{"tools 2026 bad entry", V20260728, "ListToolsResult",
			`{"tools":[{"name":"x","description":3,"inputSchema":{"type":"object"}}]` + listTail26 + `}`,
			"at /tools/0/description: got number, want string"},
		{"tools 2026 missing cache fields", V20260728, "ListToolsResult", `{"tools":[]}`,
			"at /: missing properties"},

		{"discover", V20260728, "DiscoverResult", discover, ""},
		{"discover bad cacheScope", V20260728, "DiscoverResult",
			strings.Replace(discover, `"public"`, `"everyone"`, 1), `at /cacheScope: value must be one of 'private', 'public'`},
		{"discover negative ttl", V20260728, "DiscoverResult",
			strings.Replace(discover, `"ttlMs":0`, `"ttlMs":-1`, 1), "at /ttlMs: minimum: got -1, want 0"},

		{"error 2025", V20251125, "JSONRPCErrorResponse", errResponse, ""},
		{"error 2026", V20260728, "JSONRPCErrorResponse", errResponse, ""},
		{"error without message 2025", V20251125, "JSONRPCErrorResponse",
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602}}`, "at /error: missing property 'message'"},
		{"error with wrong jsonrpc 2026", V20260728, "JSONRPCErrorResponse",
			`{"jsonrpc":"1.0","id":7,"error":{"code":-32602,"message":"x"}}`, `at /jsonrpc: value must be '2.0'`},

		{"tool", V20260728, "Tool", goodTool, ""},
		{"not JSON", V20251125, "Tool", `{"name":`, "Tool: not JSON"},
		{"trailing data", V20251125, "Tool", goodTool + `{}`, "Tool: not JSON"},
	}
	s := set(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tt.version, tt.def, []byte(tt.msg))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("valid message rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid message accepted")
			}
			if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrUnknownDefinition) {
				t.Errorf("error %v is not (only) ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if len(err.Error()) > maxErrorLen {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestErrorIsShort(t *testing.T) {
	var tools []string
	for i := range 20 {
		tools = append(tools, fmt.Sprintf(`{"name":%d,"description":false,"inputSchema":{"type":"string","properties":[]},"annotations":{"readOnlyHint":"yes"}}`, i))
	}
	err := set(t).Validate(V20251125, "ListToolsResult", []byte(`{"tools":[`+strings.Join(tools, ",")+`]}`))
	var ie *InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want an *InvalidError", err)
	}
	if len(ie.Causes) != maxCauses || ie.More == 0 {
		t.Errorf("causes %d, more %d: want %d and a count of the rest", len(ie.Causes), ie.More, maxCauses)
	}
	if n := len(err.Error()); n > maxErrorLen {
		t.Errorf("error is %d bytes: %s", n, err)
	}
	t.Log(err)
}

func TestUnknown(t *testing.T) {
	s := set(t)
	for _, c := range [][2]string{
		{"2024-11-05", "InitializeResult"},
		{V20260728, "InitializeResult"},
		{V20251125, "DiscoverResult"},
		{V20251125, "NoSuchThing"},
		{"", ""},
	} {
		err := s.Validate(c[0], c[1], []byte(`{}`))
		if !errors.Is(err, ErrUnknownDefinition) || errors.Is(err, ErrInvalid) {
			t.Errorf("Validate(%q, %q) = %v, want ErrUnknownDefinition", c[0], c[1], err)
		}
		if s.Has(c[0], c[1]) {
			t.Errorf("Has(%q, %q) = true", c[0], c[1])
		}
	}
}

// TestDefinitions pins the definitions the engine relies on, so that a schema update that renames
// one fails here rather than as a silent ErrUnknownDefinition in production.
func TestDefinitions(t *testing.T) {
	s := set(t)
	want := map[string][]string{
		V20251125: {"InitializeResult", "ListToolsResult", "ListPromptsResult", "ListResourcesResult", "Tool",
			"JSONRPCErrorResponse", "JSONRPCResultResponse", "CallToolResult", "EmptyResult"},
		V20260728: {"DiscoverResult", "ListToolsResult", "Tool", "JSONRPCErrorResponse", "CallToolResult"},
	}
	for v, defs := range want {
		for _, d := range defs {
			if !s.Has(v, d) {
				t.Errorf("%s lacks %s", v, d)
			}
		}
	}
	if got := Versions(); len(got) != 2 || got[0] != V20251125 || got[1] != V20260728 {
		t.Errorf("Versions() = %v", got)
	}
	if n := len(s.Definitions(V20251125)); n < 100 {
		t.Errorf("only %d definitions in %s", n, V20251125)
	}
	if s.Definitions("1999-01-01") != nil {
		t.Error("definitions of an unknown version")
	}
}

func TestConcurrentValidate(t *testing.T) {
	s := set(t)
	good := []byte(`{"tools":[` + goodTool + `]}`)
	bad := []byte(`{"tools":[{"name":1}]}`)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if (g+i)%2 == 0 {
					if err := s.Validate(V20251125, "ListToolsResult", good); err != nil {
						t.Errorf("good: %v", err)
						return
					}
				} else if err := s.Validate(V20251125, "ListToolsResult", bad); !errors.Is(err, ErrInvalid) {
					t.Errorf("bad: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func listing(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"tools":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"tool_%02d","title":"Tool %d","description":"Does thing number %d to the workspace, carefully and idempotently.",`+
			`"inputSchema":{"type":"object","properties":{"path":{"type":"string","maxLength":1024,"description":"Path in the workspace."},`+
			`"limit":{"type":"integer","minimum":1,"maximum":100},"tags":{"type":"array","items":{"type":"string"},"maxItems":10}},`+
			`"required":["path"],"additionalProperties":false},`+
			`"outputSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},`+
			`"annotations":{"readOnlyHint":true,"openWorldHint":false}}`, i, i, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkValidateListTools(b *testing.B) {
	s := set(b)
	msg := listing(50)
	if err := s.Validate(V20251125, "ListToolsResult", msg); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(V20251125, "ListToolsResult", msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzValidate feeds server-controlled bytes to every definition the engine uses: Validate must
// answer nil or a short error, never panic.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{initialize, discover, errResponse, goodTool, `{"tools":[` + goodTool + `]}`, `{"tools":[{"name":1}]}`, `[]`, `{"a":`, `null`} {
		f.Add([]byte(seed))
	}
	s := set(f)
	defs := [][2]string{
		{V20251125, "InitializeResult"}, {V20251125, "ListToolsResult"}, {V20251125, "JSONRPCErrorResponse"},
		{V20260728, "DiscoverResult"}, {V20260728, "ListToolsResult"}, {V20260728, "Tool"},
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		for _, d := range defs {
			err := s.Validate(d[0], d[1], msg)
			if err != nil && (!errors.Is(err, ErrInvalid) || len(err.Error()) > maxErrorLen) {
				t.Fatalf("%s %s: %v", d[0], d[1], err)
			}
		}
	})
}
