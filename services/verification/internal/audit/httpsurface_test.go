package audit

import (
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	rigPRMPath = "/.well-known/oauth-protected-resource/mcp"
	rigPRM     = `{"resource":"{origin}/mcp","authorization_servers":["{as}"],"scopes_supported":["mcp"]}`
	rigASPath  = "/.well-known/oauth-authorization-server"
	rigAS      = `{"issuer":"{origin}","authorization_endpoint":"{origin}/authorize","token_endpoint":"{origin}/token",
		"response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`
	rigToken     = "tok-0123456789"
	rigChallenge = `Bearer error="invalid_token", resource_metadata="{origin}` + rigPRMPath + `", scope="mcp"`
)

func TestHTTPSurfaceProtectedServer(t *testing.T) {
	t.Parallel()
	as := &rigMCP{docs: map[string]rigDoc{rigASPath: {body: rigAS}}}
	asSrv := rigServe(t, as)
	m := &rigMCP{era2025: true, era2026: true, token: rigToken, challenge: rigChallenge, as: asSrv.URL,
		docs: map[string]rigDoc{rigPRMPath: {body: rigPRM}}}
	srv := rigServe(t, m)

	rep := rigAudit(t, rigEngine(t, srv, asSrv), srv, map[string]string{"Authorization": "Bearer " + rigToken})
	rigWant(t, rep.Checks, "oauth-protected-resource", Success, srv.URL+"/mcp", asSrv.URL)
	rigWant(t, rep.Checks, "oauth-authorization-server", Success, "S256")
	rigWant(t, rep.Checks, "server-card", Info, "no server card published")
	for _, id := range rigStatelessChecks {
		rigWant(t, rep.Checks, id, Success)
	}
	// The caller's credentials are for the endpoint's MCP requests only.
	if len(m.leaked) > 0 || len(as.leaked) > 0 {
		t.Errorf("the caller's Authorization reached metadata requests: %v %v", m.leaked, as.leaked)
	}
}

// surfaceCase is one server around the endpoint; the AS server is allowed unless asDenied.
type surfaceCase struct {
	unprotected bool
	challenge   string
	docs        map[string]rigDoc
	asDocs      map[string]rigDoc
	asPath      string
	asDenied    bool
	prm, as     Status
	prmDetails  []string
	asDetails   []string
}

func TestHTTPSurfaceOAuth(t *testing.T) {
	t.Parallel()
	prmAt := func(body string) map[string]rigDoc { return map[string]rigDoc{rigPRMPath: {body: body}} }
	asAt := func(path, body string) map[string]rigDoc { return map[string]rigDoc{path: {body: body}} }
	correctAS := asAt(rigASPath, rigAS)
	for name, tc := range map[string]surfaceCase{
		"correct": {challenge: rigChallenge, docs: prmAt(rigPRM), asDocs: correctAS, prm: Success, as: Success,
			prmDetails: []string{"named by the 401"}},
		"resource mismatch": {challenge: rigChallenge, docs: prmAt(`{"resource":"https://other.example/mcp","authorization_servers":["{as}"]}`),
			asDocs: correctAS, prm: Failure, as: Success, prmDetails: []string{"https://other.example/mcp", "is not the audited URL", "/mcp"}},
		"resource is the origin": {challenge: rigChallenge, docs: prmAt(`{"resource":"{origin}/","authorization_servers":["{as}"]}`),
			asDocs: correctAS, prm: Warning, as: Success, prmDetails: []string{"prefix"}},
		"resource differs only in case and port": {challenge: rigChallenge, docs: prmAt(`{"resource":"{origin}/mcp/","authorization_servers":["{as}"]}`),
			asDocs: correctAS, prm: Success, as: Success},
		"metadata not JSON": {challenge: rigChallenge, docs: prmAt(`<html>`), prm: Failure, as: Skipped,
			prmDetails: []string{"not a JSON object"}, asDetails: []string{"no authorization server is named"}},
		"no authorization servers": {challenge: rigChallenge, docs: prmAt(`{"resource":"{origin}/mcp","authorization_servers":[]}`),
			prm: Failure, as: Skipped, prmDetails: []string{"authorization_servers"}},
		"metadata missing": {challenge: rigChallenge, prm: Failure, as: Skipped,
			prmDetails: []string{"HTTP 404"}, asDetails: []string{"could not be read"}},
		"metadata on the AS host": {challenge: `Bearer resource_metadata="{as}/prm"`, asDocs: map[string]rigDoc{"/prm": {body: `{"resource":"{origin}/mcp","authorization_servers":["{origin}"]}`}, rigASPath: {body: rigAS}},
			prm: Failure, as: Success, prmDetails: []string{"is not the audited URL"}},
		"metadata on a refused host": {challenge: `Bearer resource_metadata="{as}/prm"`, asDenied: true,
			prm: Warning, as: Skipped, prmDetails: []string{"target rules refuse"}},
		"metadata not https": {challenge: `Bearer resource_metadata="http://example.com/prm"`, prm: Failure, as: Skipped,
			prmDetails: []string{"not an https URL"}},
		"no resource_metadata, well-known published": {challenge: `Bearer realm="mcp"`, docs: prmAt(rigPRM), asDocs: correctAS,
			prm: Warning, as: Success, prmDetails: []string{"names no resource_metadata", "2025-06-18"}},
		"no resource_metadata, nothing published": {challenge: `Bearer realm="mcp"`, prm: Failure, as: Skipped,
			prmDetails: []string{"names no resource_metadata", "RFC 9728 well-known URL"}},
		"no challenge": {challenge: "", docs: prmAt(rigPRM), asDocs: correctAS, prm: Failure, as: Success,
			prmDetails: []string{"RFC 9110"}},
		"not Bearer": {challenge: `Basic realm="x"`, prm: Failure, as: Skipped, prmDetails: []string{"no Bearer challenge"}},
		"unparsable challenge": {challenge: `Bearer resource_metadata="unterminated`, prm: Failure, as: Skipped,
			prmDetails: []string{"cannot be parsed"}},
		"AS without S256": {challenge: rigChallenge, docs: prmAt(rigPRM),
			asDocs: asAt(rigASPath, strings.Replace(rigAS, `["S256"]`, `["plain"]`, 1)), prm: Success, as: Failure, asDetails: []string{"lacks S256"}},
		"AS without PKCE": {challenge: rigChallenge, docs: prmAt(rigPRM),
			asDocs: asAt(rigASPath, strings.Replace(rigAS, `,"code_challenge_methods_supported":["S256"]`, ``, 1)), prm: Success, as: Failure, asDetails: []string{"lacks S256"}},
		"AS issuer mismatch": {challenge: rigChallenge, docs: prmAt(rigPRM),
			asDocs: asAt(rigASPath, strings.Replace(rigAS, `"issuer":"{origin}"`, `"issuer":"https://as.example"`, 1)), prm: Success, as: Failure, asDetails: []string{"issuer"}},
		"AS with a path": {challenge: rigChallenge, docs: prmAt(rigPRM), asPath: "/tenant",
			asDocs: asAt(rigASPath+"/tenant", strings.Replace(rigAS, `"issuer":"{origin}"`, `"issuer":"{origin}/tenant"`, 1)), prm: Success, as: Success,
			asDetails: []string{rigASPath + "/tenant"}},
		"AS by OpenID discovery": {challenge: rigChallenge, docs: prmAt(rigPRM),
			asDocs: asAt(wellKnownOIDC, rigAS), prm: Success, as: Success, asDetails: []string{wellKnownOIDC}},
		"AS unreachable": {challenge: rigChallenge, docs: prmAt(rigPRM), prm: Success, as: Failure, asDetails: []string{"no metadata", "HTTP 404"}},
		"AS refused":     {challenge: rigChallenge, docs: prmAt(rigPRM), asDenied: true, prm: Success, as: Warning, asDetails: []string{"target rules"}},
		"unprotected": {unprotected: true, prm: Info, as: Skipped,
			prmDetails: []string{"not protected", "HTTP 200"}, asDetails: []string{"no authorization server is named"}},
		"unprotected, metadata published": {unprotected: true, docs: map[string]rigDoc{wellKnownPRM: {body: rigPRM}}, asDocs: correctAS,
			prm: Success, as: Success, prmDetails: []string{"although the endpoint did not ask for authorization"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			asSrv := rigServe(t, &rigMCP{docs: tc.asDocs})
			m := &rigMCP{era2025: true, token: rigToken, challenge: tc.challenge, docs: tc.docs, as: asSrv.URL + tc.asPath}
			if tc.unprotected {
				m.token = ""
			}
			srv := rigServe(t, m)
			allowed := []*httptest.Server{srv, asSrv}
			if tc.asDenied {
				allowed = allowed[:1]
			}
			r, ctx := rigRun(t, rigEngine(t, allowed...), srv, nil)
			r.httpSurface(ctx)
			checks := r.checks("not run")
			rigWant(t, checks, "oauth-protected-resource", tc.prm, tc.prmDetails...)
			rigWant(t, checks, "oauth-authorization-server", tc.as, tc.asDetails...)
			// One initialize (and the DELETE of its session), at most two metadata URLs, three
			// authorization server URLs and three server card locations.
			if got := r.client.Stats().Requests; got > 10 {
				t.Errorf("requests: got %d, want at most 10", got)
			}
		})
	}
}

func TestHTTPSurfaceEndsItsSession(t *testing.T) {
	t.Parallel()
	m := &rigMCP{era2025: true}
	srv := rigServe(t, m)
	r, ctx := rigRun(t, rigEngine(t, srv), srv, map[string]string{"X-Api-Key": "caller-secret"})
	r.httpSurface(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deletes != 1 || len(m.sessions) != 0 {
		t.Errorf("deletes %d, sessions left %d: want the initialize's session ended", m.deletes, len(m.sessions))
	}
	// initialize, DELETE, two metadata URLs, three server card locations.
	if got := r.client.Stats().Requests; got != 7 {
		t.Errorf("requests: got %d, want 7", got)
	}
}

func TestHTTPSurfaceServerCard(t *testing.T) {
	t.Parallel()
	html := rigDoc{ctype: "text/html", body: "<!doctype html><p>front page"}
	for name, tc := range map[string]struct {
		docs    map[string]rigDoc
		want    Status
		details []string
	}{
		"first draft location": {map[string]rigDoc{serverCardPaths[0]: {body: `{"serverInfo":{"name":"rig","version":"1.2"},"version":"1.0"}`}},
			Success, []string{"name rig, version 1.2", serverCardPaths[0]}},
		"newer location": {map[string]rigDoc{serverCardPaths[2]: {body: `{"name":"io.example/rig","version":"2.0.0"}`}},
			Success, []string{"name io.example/rig, version 2.0.0", serverCardPaths[2]}},
		"invalid JSON":   {map[string]rigDoc{serverCardPaths[0]: {body: `{"name":`}}, Failure, []string{"not a JSON object"}},
		"not an object":  {map[string]rigDoc{serverCardPaths[1]: {body: `["rig"]`}}, Failure, []string{"not a JSON object"}},
		"no name":        {map[string]rigDoc{serverCardPaths[0]: {body: `{"version":"1"}`}}, Failure, []string{"names no server"}},
		"absent":         {nil, Info, []string{"no server card published", "HTTP 404"}},
		"front page":     {map[string]rigDoc{serverCardPaths[0]: html, serverCardPaths[1]: html, serverCardPaths[2]: html}, Info, []string{"HTML page"}},
		"server error":   {map[string]rigDoc{serverCardPaths[0]: {status: 500, body: "oops"}}, Info, []string{"HTTP 500"}},
		"after an error": {map[string]rigDoc{serverCardPaths[0]: {status: 500}, serverCardPaths[1]: {body: `{"name":"rig"}`}}, Success, []string{"name rig"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := rigServe(t, &rigMCP{docs: tc.docs})
			r, ctx := rigRun(t, rigEngine(t, srv), srv, nil)
			r.httpSurface(ctx)
			rigWant(t, r.checks("not run"), "server-card", tc.want, tc.details...)
		})
	}
}

func TestParseWWWAuthenticate(t *testing.T) {
	t.Parallel()
	p := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		in      []string
		want    []authChallenge
		wantErr bool
	}{
		{in: []string{`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`},
			want: []authChallenge{{Scheme: "Bearer", Params: p("resource_metadata", "https://mcp.example.com/.well-known/oauth-protected-resource")}}},
		// RFC 9110 §11.6.1's example: two challenges in one field, an escaped quote.
		{in: []string{`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`},
			want: []authChallenge{{Scheme: "Newauth", Params: p("realm", "apps", "type", "1", "title", `Login to "apps"`)}, {Scheme: "Basic", Params: p("realm", "simple")}}},
		// Names are case-insensitive; BWS around "="; empty list elements.
		{in: []string{` , bearer Resource_Metadata = "x" ,, Scope=mcp , `},
			want: []authChallenge{{Scheme: "bearer", Params: p("resource_metadata", "x", "scope", "mcp")}}},
		// token68, with padding, then another challenge.
		{in: []string{`Negotiate abc+/d==, Bearer realm="r"`},
			want: []authChallenge{{Scheme: "Negotiate", Token68: "abc+/d=="}, {Scheme: "Bearer", Params: p("realm", "r")}}},
		{in: []string{`Basic abc=`}, want: []authChallenge{{Scheme: "Basic", Token68: "abc="}}},
		// A scheme alone, and challenges across two fields.
		{in: []string{`Bearer`, `DPoP algs="ES256 PS256"`},
			want: []authChallenge{{Scheme: "Bearer"}, {Scheme: "DPoP", Params: p("algs", "ES256 PS256")}}},
		// Commas inside a quoted string do not split it.
		{in: []string{`Bearer scope="a, b", error="insufficient_scope"`},
			want: []authChallenge{{Scheme: "Bearer", Params: p("scope", "a, b", "error", "insufficient_scope")}}},
		{in: []string{`Bearer realm="a\\b\"c"`}, want: []authChallenge{{Scheme: "Bearer", Params: p("realm", `a\b"c`)}}},
		{in: []string{``}, want: nil},
		// Errors keep the challenges read before them.
		{in: []string{`Basic realm="x", Bearer realm="unterminated`}, want: []authChallenge{{Scheme: "Basic", Params: p("realm", "x")}}, wantErr: true},
		{in: []string{`Bearer realm="a", realm="b"`}, wantErr: true},
		{in: []string{`Bearer realm="a` + "\x01" + `"`}, wantErr: true},
		{in: []string{`Bearer realm="a\`}, wantErr: true},
		{in: []string{`realm="x"`}, wantErr: true},
		{in: []string{`Bearer realm="x" scope="y"`}, wantErr: true},
		{in: []string{`Bearer "quoted"`}, wantErr: true},
		{in: []string{`Basic abc def`}, want: []authChallenge{{Scheme: "Basic", Token68: "abc"}}, wantErr: true},
	} {
		got, err := parseWWWAuthenticate(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: got error %v, want error %v", tc.in, err, tc.wantErr)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// FuzzParseWWWAuthenticate checks that the parser never panics, that what it returns obeys the
// grammar, and that writing the challenges back and parsing them again gives them unchanged.
func FuzzParseWWWAuthenticate(f *testing.F) {
	for _, seed := range []string{
		`Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read"`,
		`Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple"`,
		`Bearer error="invalid_token", error_description="The access token expired"`,
		`Negotiate abc+/d==, Bearer realm="r"`,
		`Basic`, `Basic abc=`, `, ,Bearer ,`, `Bearer realm="a\\b"`, `Bearer realm="x", realm="y"`,
		`Bearer realm= "spaced" , Basic`, "Bearer realm=\"\x80\xff\t\"", `Bearer realm="unterminated`,
		`DPoP algs="ES256", Bearer`, `a b=c,d=e f, g h`, `x=`, `=`, `"`, `\`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _ := parseWWWAuthenticate([]string{in})
		for _, c := range got {
			if c.Scheme == "" || strings.IndexFunc(c.Scheme, func(r rune) bool { return r > 0x7f || !isTchar(byte(r)) }) >= 0 {
				t.Fatalf("%q: scheme %q is not a token", in, c.Scheme)
			}
			if c.Token68 != "" && c.Params != nil {
				t.Fatalf("%q: a challenge with both a token68 and params", in)
			}
			for k, v := range c.Params {
				if k == "" || k != strings.ToLower(k) {
					t.Fatalf("%q: parameter name %q", in, k)
				}
				if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
					t.Fatalf("%q: a control character in the value %q", in, v)
				}
			}
		}
		again, err := parseWWWAuthenticate([]string{formatChallenges(got, sortedNames)})
		if err != nil {
			t.Fatalf("%q: the challenges written back do not parse: %v", in, err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("%q: got %#v, written back and parsed %#v", in, got, again)
		}
	})
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://MCP.Example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com:443/mcp/", "https://mcp.example.com/mcp"},
		{"HTTPS://mcp.example.com", "https://mcp.example.com"},
		{"https://mcp.example.com/", "https://mcp.example.com"},
		{"https://mcp.example.com:8443/MCP", "https://mcp.example.com:8443/MCP"},
		{"http://mcp.example.com:80/a", "http://mcp.example.com/a"},
		{"http://mcp.example.com:443/a", "http://mcp.example.com:443/a"},
		{"https://[2001:DB8::1]:443/mcp", "https://[2001:db8::1]/mcp"},
		{"https://mcp.example.com/a%2Fb", "https://mcp.example.com/a%2Fb"},
		{"https://mcp.example.com/mcp?tenant=A", "https://mcp.example.com/mcp?tenant=A"},
		{" https://mcp.example.com/mcp ", "https://mcp.example.com/mcp"},
		{"https://user:pw@mcp.example.com/", ""},
		{"https://mcp.example.com/#frag", ""},
		{"/mcp", ""},
		{"ftp://mcp.example.com/", ""},
		{"https:///mcp", ""},
		{"", ""},
	} {
		got, err := normalizeURL(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: got %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestResourceMatch(t *testing.T) {
	t.Parallel()
	const endpoint = "https://mcp.example.com/tenant/mcp"
	for _, tc := range []struct {
		resource string
		want     int
	}{
		{"https://MCP.example.com:443/tenant/mcp/", resourceSame},
		{"https://mcp.example.com/tenant", resourcePrefix},
		{"https://mcp.example.com", resourcePrefix},
		{"https://mcp.example.com/ten", resourceDiffers},
		{"https://mcp.example.com/tenant/mcp/more", resourceDiffers},
		{"https://other.example.com/tenant/mcp", resourceDiffers},
		{"http://mcp.example.com/tenant/mcp", resourceDiffers},
		{"not a url", resourceDiffers},
	} {
		if got := resourceMatch(tc.resource, endpoint); got != tc.want {
			t.Errorf("%q: got %d, want %d", tc.resource, got, tc.want)
		}
	}
}

// formatChallenges writes cs back as one field value, every auth-param value quoted, parameters in
// the order names gives . The fuzz test parses it again.
func formatChallenges(cs []authChallenge, names func(map[string]string) []string) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Scheme)
		switch {
		case c.Token68 != "":
			b.WriteString(" " + c.Token68)
		case len(c.Params) > 0:
			for j, k := range names(c.Params) {
				if j == 0 {
					b.WriteByte(' ')
				} else {
					b.WriteString(", ")
				}
				b.WriteString(k + `="`)
				for _, ch := range []byte(c.Params[k]) {
					if ch == '"' || ch == '\\' {
						b.WriteByte('\\')
					}
					b.WriteByte(ch)
				}
				b.WriteByte('"')
			}
		}
	}
	return b.String()
}
