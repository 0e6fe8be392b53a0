package enforcement

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"io.github.acme/*", "io.github.acme/files", true},
		{"io.github.acme/*", "io.github.acme/", true},
		{"io.github.acme/*", "io.github.acmex/files", false},
		{"*/files", "io.github.acme/files", true},
		{"*", "io.github.acme/files", false}, // a star never spans '/'
		{"*/*", "io.github.acme/files", true},
		{"io.github.*/*", "io.github.acme/files", true},
		{"io.*.acme/f*s", "io.github.acme/files", true},
		{"io.*.acme/f*s", "io.github.acme/filez", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY/c", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"**", "", true},
		{"delete_*", "delete_file", true},
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "example.com", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// FuzzMatch checks Match against the regular expression a pattern means: '*' is [^/]*, everything
// else itself.
func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{{"io.github.acme/*", "io.github.acme/files"}, {"a*b*c", "aXXb/Yc"}, {"**/*", "/"}, {"*x*", "xx"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 64 || len(s) > 256 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile(`^(?s:` + strings.Join(parts, `[^/]*`) + `)$`)
		if err != nil {
			t.Skip()
		}
		if got, want := Match(pattern, s), re.MatchString(s); got != want {
			t.Fatalf("Match(%q, %q) = %v, the regular expression says %v", pattern, s, got, want)
		}
	})
}

func TestNormalize(t *testing.T) {
	valid := func(r Rules) Rules { return r }
	tests := []struct {
		name  string
		rules Rules
		field string // the first invalid field; "" when valid
	}{
		{"empty", Rules{}, ""},
		{"everything", valid(Rules{
			DefaultAction: Allow, Servers: Patterns{Allow: []string{"io.github.acme/*"}, Deny: []string{"*/evil"}}, MaxChangeRisk: "medium",
			Transports: []string{"stdio", "sse"}, RemoteHosts: Patterns{Allow: []string{"*.acme.com"}},
			Audit: AuditRules{Require: true, MinVerdict: "warn", MinReadinessScore: 70},
			Tools: ToolRules{Names: Patterns{Deny: []string{"exec_*", "io.github.acme/files/rm"}}, DenyAnnotations: []AnnotationRule{{Annotation: "destructiveHint", Value: true}},
				Approved: []string{"io.github.acme/files/delete_*"}},
			PinTools: true,
		}), ""},
		{"action", Rules{DefaultAction: "block"}, "rules.default_action"},
		{"risk", Rules{MaxChangeRisk: "critical"}, "rules.max_change_risk"},
		{"server pattern without slash", Rules{Servers: Patterns{Allow: []string{"acme"}}}, "rules.servers.allow.0"},
		{"server pattern with two slashes", Rules{Servers: Patterns{Deny: []string{"a/b/c"}}}, "rules.servers.deny.0"},
		{"server pattern with a space", Rules{Servers: Patterns{Deny: []string{"a/b c"}}}, "rules.servers.deny.0"},
		{"long pattern", Rules{Servers: Patterns{Deny: []string{"a/" + strings.Repeat("b", 300)}}}, "rules.servers.deny.0"},
		{"too many patterns", Rules{Servers: Patterns{Allow: make([]string, maxPatterns+1)}}, "rules.servers.allow"},
		{"transport", Rules{Transports: []string{"websocket"}}, "rules.transports.0"},
		{"host with port", Rules{RemoteHosts: Patterns{Deny: []string{"acme.com:443"}}}, "rules.remote_hosts.deny.0"},
		{"verdict", Rules{Audit: AuditRules{MinVerdict: "ok"}}, "rules.audit.min_verdict"},
		{"negative score", Rules{Audit: AuditRules{MinReadinessScore: -1}}, "rules.audit.min_readiness_score"},
		{"tool pattern with one slash", Rules{Tools: ToolRules{Names: Patterns{Allow: []string{"a/b"}}}}, "rules.tools.names.allow.0"},
		{"annotation name", Rules{Tools: ToolRules{DenyAnnotations: []AnnotationRule{{Annotation: "destructive-hint"}}}}, "rules.tools.deny_annotations.0.annotation"},
		{"approval of a bare tool", Rules{Tools: ToolRules{Approved: []string{"rm"}}}, "rules.tools.approved.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.rules.Normalize("rules")
			var invalid *fault.ValidationError
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Normalize: %v", err)
				}
				if got.DefaultAction == "" || got.Servers.Allow == nil || got.Transports == nil || got.Tools.DenyAnnotations == nil || got.Tools.Approved == nil {
					t.Errorf("Normalize = %+v, want defaults and empty lists filled in", got)
				}
				return
			}
			if !errors.As(err, &invalid) || invalid.Problems[0].Field != tt.field {
				t.Fatalf("Normalize: got %v, want a problem at %s", err, tt.field)
			}
		})
	}
}

func TestHint(t *testing.T) {
	tests := []struct {
		annotations map[string]any
		name        string
		want        bool
	}{
		{nil, "destructiveHint", true},
		{nil, "readOnlyHint", false},
		{nil, "idempotentHint", false},
		{nil, "openWorldHint", true},
		{nil, "customHint", false},
		{map[string]any{"readOnlyHint": true}, "destructiveHint", false},
		{map[string]any{"readOnlyHint": true, "destructiveHint": true}, "destructiveHint", false},
		{map[string]any{"destructiveHint": false}, "destructiveHint", false},
		{map[string]any{"destructiveHint": "yes"}, "destructiveHint", true},
		{map[string]any{"idempotentHint": true}, "idempotentHint", true},
		{map[string]any{"openWorldHint": false}, "openWorldHint", false},
		{map[string]any{"customHint": true}, "customHint", true},
	}
	for _, tt := range tests {
		if got := hint(tt.annotations, tt.name); got != tt.want {
			t.Errorf("hint(%v, %s) = %v, want %v", tt.annotations, tt.name, got, tt.want)
		}
	}
}

// FuzzNormalize feeds arbitrary patterns and names to the rules' checks: they never panic, and
// rules they accept are accepted again unchanged.
func FuzzNormalize(f *testing.F) {
	f.Add("io.github.acme/*", "*.acme.com", "delete_*", "io.github.acme/files/rm", "destructiveHint", "medium")
	f.Add("", "", "", "", "", "")
	f.Add("a/b/c", "HOST:1", "x/y", "rm", "no such", "extreme")
	f.Fuzz(func(t *testing.T, server, host, tool, approved, annotation, risk string) {
		r := Rules{
			Servers: Patterns{Allow: []string{server}}, RemoteHosts: Patterns{Deny: []string{host}}, MaxChangeRisk: risk,
			Tools: ToolRules{Names: Patterns{Deny: []string{tool}}, Approved: []string{approved},
				DenyAnnotations: []AnnotationRule{{Annotation: annotation, Value: true}}},
		}
		got, err := r.Normalize("rules")
		if err != nil {
			return
		}
		again, err := got.Normalize("rules")
		if err != nil {
			t.Fatalf("accepted rules refused on a second look: %v", err)
		}
		a, _, _ := Canonical(got)
		b, _, _ := Canonical(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("Normalize is not idempotent: %s then %s", a, b)
		}
		// An accepted pattern never panics when matched.
		_ = Match(server, "io.github.acme/files")
	})
}
