package workspace

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckFullName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string // want "" = refused
	}{
		{"acme/agents", "acme/agents"},
		{"  acme/agents ", "acme/agents"},
		{"Acme-Corp/agent_v2.0", "Acme-Corp/agent_v2.0"},
		{"a/.github", "a/.github"},
		{"", ""},
		{"acme", ""},
		{"acme/", ""},
		{"/agents", ""},
		{"a/b/c", ""},
		{"acme/my agents", ""},
		{"acme/agénts", ""},
		{"../agents", ""},
		{"acme/..", ""},
		{"acme/.", ""},
		{strings.Repeat("a", 100) + "/b", strings.Repeat("a", 100) + "/b"},
		{strings.Repeat("a", 101) + "/b", ""},
	} {
		got, problems := checkFullName(tt.in)
		if (problems == nil) != (tt.want != "") || got != tt.want {
			t.Errorf("checkFullName(%q): got %q %v, want %q", tt.in, got, problems, tt.want)
		}
	}
}

func TestCheckEvaluators(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    []string
		want  string
		field string
	}{
		{nil, "[mcp readiness]", ""},
		{[]string{}, "[mcp readiness]", ""},
		{[]string{"readiness", "mcp"}, "[mcp readiness]", ""},
		{[]string{"readiness", "readiness"}, "[readiness]", ""},
		{[]string{"mcp"}, "[mcp]", ""},
		{[]string{"mcp", "MCP"}, "", "evaluators.1"},
		{[]string{""}, "", "evaluators.0"},
		{make([]string, 11), "", "evaluators"},
	} {
		got, problems := checkEvaluators(tt.in)
		switch {
		case tt.field == "" && (problems != nil || fmt.Sprint(got) != tt.want):
			t.Errorf("checkEvaluators(%q): got %v %v, want %s", tt.in, got, problems, tt.want)
		case tt.field != "" && (len(problems) == 0 || problems[0].Field != tt.field):
			t.Errorf("checkEvaluators(%q): got %v, want a problem at %s", tt.in, problems, tt.field)
		}
	}
}

func TestCheckBranch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"main", true}, {" release/1.2 ", true}, {"", false}, {"my branch", false}, {"a\tb", false},
		{"x\x00", false}, {strings.Repeat("b", 255), true}, {strings.Repeat("b", 256), false},
	} {
		if _, problems := checkBranch(tt.in); (problems == nil) != tt.ok {
			t.Errorf("checkBranch(%q): got %v, want ok %v", tt.in, problems, tt.ok)
		}
	}
}

// FuzzCheckFullName: an accepted name is owner/name with two non-empty parts and no dot segments,
// and accepting it again gives it back unchanged.
func FuzzCheckFullName(f *testing.F) {
	for _, seed := range []string{"acme/agents", "../x", "a/b/c", " a/b ", "a/..", "ü/x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, problems := checkFullName(in)
		if problems != nil {
			return
		}
		owner, name, ok := strings.Cut(got, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") || owner == ".." || name == ".." || owner == "." || name == "." {
			t.Fatalf("checkFullName(%q) accepted %q", in, got)
		}
		if again, p := checkFullName(got); p != nil || again != got {
			t.Fatalf("checkFullName(%q) = %q, not stable (%q, %v)", in, got, again, p)
		}
	})
}
