package claim

import (
	"strings"
	"testing"
)

func TestParseServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		server        string
		ok            bool
		login, domain string
		methods       string
	}{
		{"io.github.alice/weather", true, "alice", "", "code_host"},
		{"io.github.Alice-B/weather", true, "alice-b", "", "code_host"},
		{"com.example/weather", true, "", "example.com", "dns,http"},
		{"com.example.api/weather", true, "", "api.example.com", "dns,http"},
		{"COM.Example/x", true, "", "example.com", "dns,http"},
		{"io.github.-alice/x", false, "", "", ""},
		{"io.github.a--b/x", false, "", "", ""},
		{"io.github./x", false, "", "", ""},
		{"localhost/x", false, "", "", ""},
		{"example/x", false, "", "", ""},
		{"1com.example/x", false, "", "", ""},
		{"com.-example/x", false, "", "", ""},
		{"com.example", false, "", "", ""},
		{"com.example/a/b", false, "", "", ""},
		{"com.example/" + strings.Repeat("a", 200), false, "", "", ""},
		{"<script>/x", false, "", "", ""},
	} {
		ns, _, ok := ParseServer(c.server)
		if ok != c.ok {
			t.Errorf("%q: ok %v, want %v", c.server, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if ns.Login != c.login || ns.Domain != c.domain || strings.Join(ns.Methods(), ",") != c.methods {
			t.Errorf("%q: got %+v %v, want login %q domain %q methods %s", c.server, ns, ns.Methods(), c.login, c.domain, c.methods)
		}
	}
}

func FuzzParseServer(f *testing.F) {
	for _, s := range []string{"io.github.alice/weather", "com.example/x", "a.b.c/d", "io.github.x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ns, name, ok := ParseServer(s)
		if !ok {
			return
		}
		if (ns.Login == "") == (ns.Domain == "") || name == "" || ns.Raw+"/"+name != s {
			t.Fatalf("%q: got %+v %q", s, ns, name)
		}
		if ns.Domain != "" && (strings.ContainsAny(ns.Domain, "/:@ ") || len(ns.Domain) > 253) {
			t.Fatalf("%q: domain %q", s, ns.Domain)
		}
	})
}
