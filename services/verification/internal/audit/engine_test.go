package audit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// The engine's acceptance bar: every audittest fixture audited through the public interface
// (Engine.Conformance and Engine.Readiness), each report held to the invariants every report keeps.

// newCA is a throwaway CA for a test or a benchmark.
func newCA(tb testing.TB) *audittest.CA {
	tb.Helper()
	ca, err := audittest.NewCA()
	if err != nil {
		tb.Fatal(err)
	}
	return ca
}

// serveAudited serves h with a leaf of ca until the test ends and returns the server and an engine
// that may audit it, configured by cfg (its Limits and Deadline; the rest is filled in).
func serveAudited(tb testing.TB, ca *audittest.CA, h http.Handler, cfg Config) (*audittest.Server, *Engine) {
	tb.Helper()
	srv := ca.Serve(h)
	tb.Cleanup(srv.Close)
	return srv, auditorFor(tb, ca, srv.Port, cfg)
}

// auditorFor is an engine trusting ca that may reach port on loopback.
func auditorFor(tb testing.TB, ca *audittest.CA, port int, cfg Config) *Engine {
	tb.Helper()
	schemas, err := testSchemas()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.RootCAs, cfg.Schemas = ca.Pool(), schemas
	cfg.Targets = safehttp.TargetPolicy{AllowedPorts: []int{port}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// bearerTarget is srv's endpoint with "Authorization: Bearer token" when token is set.
func bearerTarget(srv *audittest.Server, token string) Target {
	t := Target{URL: srv.URL}
	if token != "" {
		t.Headers = map[string]string{"Authorization": "Bearer " + token}
	}
	return t
}

// wantReport holds a conformance report to what every report promises: one check per catalog entry
// in catalog order, each citing its spec section with bounded details, counts and a verdict that
// match the statuses, both eras, and traffic within the limits.
func wantReport(t *testing.T, rep *Report, limits probe.Limits) {
	t.Helper()
	if len(rep.Checks) != len(Catalog) {
		t.Fatalf("%d checks, want one per catalog entry (%d)", len(rep.Checks), len(Catalog))
	}
	var counts Counts
	for i, c := range rep.Checks {
		def := Catalog[i]
		if c.ID != def.ID || c.Name != def.Name || c.Era != def.Era || c.SpecReference != def.SpecReference {
			t.Errorf("check %d is %s (%q, era %q, %q), want catalog entry %+v", i, c.ID, c.Name, c.Era, c.SpecReference, def)
		}
		if !strings.HasPrefix(c.SpecReference, "https://") {
			t.Errorf("%s: spec_reference %q", c.ID, c.SpecReference)
		}
		wantDetails(t, c.ID, c.Details)
		switch c.Status {
		case Success:
			counts.Success++
		case Failure:
			counts.Failure++
		case Warning:
			counts.Warning++
		case Skipped:
			counts.Skipped++
		case Info:
			counts.Info++
		default:
			t.Errorf("%s: status %q", c.ID, c.Status)
		}
		if c.DurationMS < 0 {
			t.Errorf("%s: duration %d ms", c.ID, c.DurationMS)
		}
	}
	if rep.Counts != counts {
		t.Errorf("counts %+v, the checks say %+v", rep.Counts, counts)
	}
	verdict := VerdictPass
	switch {
	case counts.Failure > 0:
		verdict = VerdictFail
	case counts.Warning > 0:
		verdict = VerdictWarn
	}
	if rep.Verdict != verdict {
		t.Errorf("verdict %q, the counts %+v say %q", rep.Verdict, counts, verdict)
	}
	wantEras(t, rep.Eras)
	wantTraffic(t, rep.Traffic, limits)
	if rep.StartedAt.IsZero() || rep.DurationMS < 0 {
		t.Errorf("started %v, duration %d ms", rep.StartedAt, rep.DurationMS)
	}
}

// wantDetails holds one piece of details to the cap: at most maxDetails bytes and the ellipsis that
// marks a cut, valid UTF-8.
func wantDetails(t *testing.T, id, details string) {
	t.Helper()
	if len(details) > maxDetails+len("…") || (len(details) > maxDetails && !strings.HasSuffix(details, "…")) {
		t.Errorf("%s: details of %d bytes: %.80q...", id, len(details), details)
	}
	if !utf8.ValidString(details) {
		t.Errorf("%s: details are not UTF-8: %q", id, details)
	}
}

// wantEras holds a report's eras: the stateful one, then the stateless one, each with a status.
func wantEras(t *testing.T, eras []EraResult) {
	t.Helper()
	if len(eras) != 2 || eras[0].Era != EraStateful || eras[1].Era != EraStateless {
		t.Fatalf("eras %+v, want %s then %s", eras, EraStateful, EraStateless)
	}
	for _, e := range eras {
		if !slices.Contains([]string{EraSupported, EraNotSupported, EraBroken}, e.Status) {
			t.Errorf("era %s: status %q", e.Era, e.Status)
		}
		if (e.Status == EraSupported) != (e.ProtocolVersion != "") {
			t.Errorf("era %s: status %s with protocol version %q", e.Era, e.Status, e.ProtocolVersion)
		}
		wantDetails(t, "era "+e.Era, e.Details)
	}
}

// wantTraffic holds a report's traffic to the engine's limits.
func wantTraffic(t *testing.T, tr Traffic, limits probe.Limits) {
	t.Helper()
	l := limits.WithDefaults()
	if tr.MaxRequests != l.MaxRequests || tr.Requests < 0 || tr.Requests > tr.MaxRequests {
		t.Errorf("traffic %+v, budget %d", tr, l.MaxRequests)
	}
	if tr.BytesReceived > int64(tr.Requests)*l.MaxResponseBytes || tr.Truncated > tr.Requests {
		t.Errorf("traffic %+v over %d bytes per answer", tr, l.MaxResponseBytes)
	}
}

// wantServerSaw compares a report's traffic with what the fixture saw: every request the engine
// counts reached the server, and no more than the limits let through at once.
func wantServerSaw(t *testing.T, srv *audittest.Server, before int, tr Traffic, limits probe.Limits) {
	t.Helper()
	if got := srv.Requests() - before; got != tr.Requests {
		t.Errorf("the server saw %d requests, the report counts %d", got, tr.Requests)
	}
	if got, most := srv.MaxInFlight(), limits.WithDefaults().MaxConcurrent; got > most {
		t.Errorf("the server had %d requests in flight at once, the limit is %d", got, most)
	}
}

// wantReadinessReport holds a readiness report to the invariants it shares with a conformance report.
func wantReadinessReport(t *testing.T, rep *ReadinessReport, limits probe.Limits) {
	t.Helper()
	wantEras(t, rep.Eras)
	wantTraffic(t, rep.Traffic, limits)
	if rep.Score < 0 || rep.Score > 100 {
		t.Errorf("score %d", rep.Score)
	}
	if rep.ProductionReady && len(rep.Findings) > 0 && rep.Score < 100 {
		t.Logf("production ready with findings %+v", rep.Findings)
	}
}

// conformance audits target and holds the report to the invariants, and the traffic to what srv saw.
func conformance(t *testing.T, e *Engine, srv *audittest.Server, target Target, limits probe.Limits) *Report {
	t.Helper()
	before := srv.Requests()
	rep, err := e.Conformance(context.Background(), target)
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	wantReport(t, rep, limits)
	wantServerSaw(t, srv, before, rep.Traffic, limits)
	if rep.URL != srv.URL {
		t.Errorf("report url %q, want %q", rep.URL, srv.URL)
	}
	return rep
}

// readinessAuditOf runs a readiness audit of target and holds the report to the invariants.
func readinessAuditOf(t *testing.T, e *Engine, srv *audittest.Server, target Target, limits probe.Limits) *ReadinessReport {
	t.Helper()
	before := srv.Requests()
	rep, err := e.Readiness(context.Background(), target)
	if err != nil {
		t.Fatalf("Readiness: %v", err)
	}
	wantReadinessReport(t, rep, limits)
	wantServerSaw(t, srv, before, rep.Traffic, limits)
	return rep
}

// checkOf returns check id of a report.
func checkOf(rep *Report, id string) Check {
	for _, c := range rep.Checks {
		if c.ID == id {
			return c
		}
	}
	return Check{}
}

// failures lists the ids of the failed checks other than those of allowed.
func failures(rep *Report, allowed ...string) []string {
	var out []string
	for _, c := range rep.Checks {
		if c.Status == Failure && !slices.Contains(allowed, c.ID) {
			out = append(out, c.ID+" ("+c.Details+")")
		}
	}
	return out
}

// TestEngineDefects is the acceptance table: each defect fixture makes exactly its check report its
// status (and only the checks it names as Also fail beside it), and its readiness rule fire.
func TestEngineDefects(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	for _, d := range audittest.Defects() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			if d.Check == "" && d.Rule == "" {
				t.Fatalf("defect %s names neither a check nor a rule", d.Name)
			}
			if _, ok := catalogIndex(d.Check); d.Check != "" && !ok {
				t.Fatalf("defect %s names check %q, which is not in the catalog", d.Name, d.Check)
			}
			var limits probe.Limits
			srv, e := serveAudited(t, ca, d.Handler(), Config{})
			target := bearerTarget(srv, d.Token)
			rep := conformance(t, e, srv, target, limits)
			if d.Check != "" {
				want := Failure
				if d.Status != "" {
					want = Status(d.Status)
				}
				if c := checkOf(rep, d.Check); c.Status != want {
					t.Errorf("%s: %s, want %s (%s)", d.Check, c.Status, want, c.Details)
				}
			}
			allowed := append([]string{d.Check}, d.Also...)
			if extra := failures(rep, allowed...); len(extra) > 0 {
				t.Errorf("other checks fail: %s", strings.Join(extra, "; "))
			}
			for _, id := range d.Also {
				if c := checkOf(rep, id); c.Status != Failure {
					t.Errorf("%s (also): %s, want FAILURE (%s)", id, c.Status, c.Details)
				}
			}
			if d.Check == "" {
				if rep.Counts.Failure > 0 || rep.Verdict == VerdictFail {
					t.Errorf("a readiness-only defect fails conformance: %+v", rep.Counts)
				}
			}
			if d.Rule == "" {
				return
			}
			rr := readinessAuditOf(t, e, srv, target, limits)
			var rules []string
			for _, f := range rr.Findings {
				rules = append(rules, f.Rule)
			}
			if !slices.Contains(rules, d.Rule) {
				t.Errorf("rule %s has no finding; findings %v", d.Rule, rules)
			}
		})
	}
}

// correctFixtures are the servers that pass every check, with the bearer token each wants.
var correctFixtures = []struct {
	name  string
	h     func() http.Handler
	token string
}{
	{"Correct", audittest.Correct, ""},
	{"Full", audittest.Full, ""},
	{"Dual", audittest.Dual, ""},
	{"Stateless", audittest.Stateless, ""},
	{"Protected", func() http.Handler { return audittest.Protected(correctToken) }, correctToken},
}

// correctToken is Protected's token; long enough that Redact would scrub it (4 bytes or more).
const correctToken = "correct-fixture-token-5b1f"

func TestEngineCorrectServers(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	for _, f := range correctFixtures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			var limits probe.Limits
			srv, e := serveAudited(t, ca, f.h(), Config{})
			target := bearerTarget(srv, f.token)
			rep := conformance(t, e, srv, target, limits)
			if fails := failures(rep); len(fails) > 0 || rep.Verdict == VerdictFail {
				t.Errorf("verdict %s; failures: %s", rep.Verdict, strings.Join(fails, "; "))
			}
			supported := 0
			for _, era := range rep.Eras {
				if era.Status == EraBroken {
					t.Errorf("era %s broken: %s", era.Era, era.Details)
				}
				if era.Status == EraSupported {
					supported++
				}
			}
			if supported == 0 || rep.Server == nil || rep.Surface == nil {
				t.Errorf("eras %+v, server %+v, surface %v", rep.Eras, rep.Server, rep.Surface != nil)
			}

			rr := readinessAuditOf(t, e, srv, target, limits)
			if rr.Score != 100 || !rr.ProductionReady || len(rr.Findings) > 0 {
				t.Errorf("readiness: score %d, production ready %v, findings %+v", rr.Score, rr.ProductionReady, rr.Findings)
			}
		})
	}

	// Without its token, the protected server is not a failed audit: the eras say why they could not
	// be probed, and the OAuth checks, which need no token, pass.
	t.Run("Protected without its token", func(t *testing.T) {
		t.Parallel()
		var limits probe.Limits
		srv, e := serveAudited(t, ca, audittest.Protected(correctToken), Config{})
		rep := conformance(t, e, srv, Target{URL: srv.URL}, limits)
		if fails := failures(rep); len(fails) > 0 || rep.Verdict == VerdictFail {
			t.Errorf("verdict %s; failures: %s", rep.Verdict, strings.Join(fails, "; "))
		}
		for _, era := range rep.Eras {
			if era.Status != EraNotSupported || !strings.Contains(era.Details, "authorization") {
				t.Errorf("era %s: %s (%s), want %s naming authorization", era.Era, era.Status, era.Details, EraNotSupported)
			}
		}
		for _, id := range []string{"oauth-protected-resource", "oauth-authorization-server"} {
			if c := checkOf(rep, id); c.Status != Success {
				t.Errorf("%s: %s (%s)", id, c.Status, c.Details)
			}
		}
		for _, id := range []string{"server-initialize", "server-discover"} {
			if c := checkOf(rep, id); !strings.Contains(c.Details, "authorization") {
				t.Errorf("%s: %s (%s), want details naming authorization", id, c.Status, c.Details)
			}
		}
	})
}

// echoAuthorization is Protected, but it answers a body that is not JSON with HTTP 500 and a text
// that quotes the request's Authorization header, the way a careless error page does.
func echoAuthorization(token string) http.Handler {
	inner := audittest.Protected(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if !json.Valid(body) {
				auth := r.Header.Get("Authorization")
				_, cred, _ := strings.Cut(auth, " ")
				http.Error(w, "cannot parse the request of "+auth+" (credential "+cred+")", http.StatusInternalServerError)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		inner.ServeHTTP(w, r)
	})
}

// nameAfterCredential is Dual answering with the caller's credential in place of its server name,
// tool titles and descriptions included: a target may copy what it is sent into what it describes.
func nameAfterCredential() http.Handler {
	inner := audittest.Dual()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		body := strings.ReplaceAll(rec.Body.String(), audittest.ServerName, cred)
		body = strings.ReplaceAll(body, "weather", cred)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, body)
	})
}

// TestEngineNeverEchoesCallerHeaders: the caller's header value never appears in a report, not even
// when the target quotes it back.
func TestEngineNeverEchoesCallerHeaders(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	for name, h := range map[string]http.Handler{
		"Protected":              audittest.Protected(correctToken),
		"Protected, echoing it":  echoAuthorization(correctToken),
		"Stateless, ignoring it": audittest.Stateless(),
		"Dual, named after it":   nameAfterCredential(),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var limits probe.Limits
			srv, e := serveAudited(t, ca, h, Config{})
			target := bearerTarget(srv, correctToken)
			target.Headers["X-Api-Key"] = "x-api-key-" + correctToken[:10]
			rep := conformance(t, e, srv, target, limits)
			rr := readinessAuditOf(t, e, srv, target, limits)
			for what, v := range map[string]any{"conformance": rep, "readiness": rr} {
				out, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				for _, secret := range []string{correctToken, target.Headers["X-Api-Key"]} {
					if strings.Contains(string(out), secret) {
						t.Errorf("the %s report holds the caller's header value %q", what, secret)
					}
				}
			}
			if name == "Dual, named after it" && (rep.Server == nil || rep.Server.Name != "[redacted]") {
				t.Errorf("server %+v, want the echoed credential redacted from its name", rep.Server)
			}
			if name == "Protected, echoing it" {
				if c := checkOf(rep, "malformed-json"); c.Status != Failure || !strings.Contains(c.Details, "[redacted]") {
					t.Errorf("malformed-json: %s (%s), want the echo redacted", c.Status, c.Details)
				}
			}
		})
	}
}
