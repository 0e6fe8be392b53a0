package app_test

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// renamingTools is Dual until rename is called: from then on its destructive delete_alert tool is
// listed as purge_alerts, which removes a tool and adds a destructive one (both high risk).
type renamingTools struct {
	inner   http.Handler
	renamed atomic.Bool
}

func (f *renamingTools) rename() { f.renamed.Store(true) }

func (f *renamingTools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !f.renamed.Load() {
		f.inner.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.inner.ServeHTTP(rec, r)
	body := bytes.ReplaceAll(rec.Body.Bytes(), []byte(`"name":"delete_alert"`), []byte(`"name":"purge_alerts"`))
	maps.Copy(w.Header(), rec.Header())
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// timelineStack is a registry that lists one server, io.example/live, whose remote is a TLS MCP
// fixture, and a service that syncs the registry and may audit the fixture.
func timelineStack(t *testing.T, extra map[string]string) (*registryStack, *renamingTools, string) {
	t.Helper()
	fixture := &renamingTools{inner: audittest.Dual()}
	srv := fixtures.Serve(fixture)
	t.Cleanup(srv.Close)
	reg, env := registry(t, func(r *registryfixture.Registry) {
		live := registryfixture.Server("io.example/live", "1.0.0")
		live["remotes"] = []any{map[string]any{"type": "streamable-http", "url": srv.URL}}
		r.Publish(live)
	})
	env[app.EnvPrefix+"AUDIT_ALLOWED_PORTS"] = strconv.Itoa(srv.Port)
	maps.Copy(env, extra)
	s := startWith(t, app.Boot, env)
	_, key := s.newKey("reader")
	rs := &registryStack{stack: s, reg: reg, auth: bearer(key)}
	eventually(t, "the baseline sync", func() bool {
		return rs.call(http.MethodGet, "/v1/intelligence/servers/io.example/live", nil).Status == http.StatusOK
	})
	return rs, fixture, srv.URL
}

// timeline returns the history items' entry types and versions (or remote URLs), newest first.
func (s *registryStack) timeline(path string) ([]string, []map[string]any) {
	s.t.Helper()
	its := items(s.t.(*testing.T), s.get(path))
	out := make([]string, len(its))
	for i, it := range its {
		switch it["entry_type"] {
		case "listing_version":
			out[i] = "listing " + it["version"].(string)
		case "surface_observation":
			out[i] = "surface " + strconv.Itoa(int(it["tool_count"].(float64)))
		default:
			s.t.Fatalf("history item %v has no entry_type", it)
		}
	}
	return out, its
}

// TestTimelineJoinsVersionsAndToolSurfaces: a registry version bump and a tool-surface change of the
// same server appear in order in its history, in the diff between any two points, and in the change
// feeds, the high-risk feed included.
func TestTimelineJoinsVersionsAndToolSurfaces(t *testing.T) {
	t.Parallel()
	s, fixture, remote := timelineStack(t, nil)
	tok := s.token("timeline", 600, "service:audit")

	// First observation of the remote: the URL's baseline, no change.
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote}, bearer(tok), http.StatusOK)
	// An audit with headers sees the caller's surface, not the URL's: not recorded.
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote, "headers": map[string]any{"X-Tenant": "a"}}, bearer(tok), http.StatusOK)
	got, _ := s.timeline("/v1/intelligence/servers/io.example/live/history")
	if want := []string{"surface 3", "listing 1.0.0"}; !slices.Equal(got, want) {
		t.Fatalf("history after the first audit: got %v, want %v", got, want)
	}

	// The registry publishes 1.1.0.
	bump := registryfixture.Server("io.example/live", "1.1.0")
	bump["remotes"] = []any{map[string]any{"type": "streamable-http", "url": remote}}
	s.reg.Publish(bump)
	eventually(t, "the sync of 1.1.0", func() bool {
		got, _ := s.timeline("/v1/intelligence/servers/io.example/live/history")
		return len(got) == 3
	})

	// The remote renames its destructive tool, and an audit (here the audit route) sees it.
	fixture.rename()
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote}, bearer(tok), http.StatusOK)
	// The same surface again adds nothing.
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote}, bearer(tok), http.StatusOK)

	got, its := s.timeline("/v1/intelligence/servers/io.example/live/history")
	if want := []string{"surface 3", "listing 1.1.0", "surface 3", "listing 1.0.0"}; !slices.Equal(got, want) {
		t.Fatalf("history: got %v, want %v", got, want)
	}
	if its[0]["remote_url"] != remote || its[0]["surface_hash"] == its[2]["surface_hash"] || its[1]["is_latest"] != true || its[3]["is_latest"] == true {
		t.Errorf("history items: got %v", its)
	}
	newer, older := "surface:"+its[0]["observation_id"].(string), "surface:"+its[2]["observation_id"].(string)

	// Pages follow the same order.
	page1 := s.get("/v1/intelligence/servers/io.example/live/history?limit=3")
	cursor, _ := page1["next_cursor"].(string)
	page2 := s.get("/v1/intelligence/servers/io.example/live/history?limit=3&cursor=" + cursor)
	if p := items(t, page2); cursor == "" || len(p) != 1 || p[0]["version"] != "1.0.0" {
		t.Errorf("second page: got %v (cursor %q), want the 1.0.0 snapshot", page2, cursor)
	}

	// The diff between the two observations has both kinds of changes: the surface's, and the
	// listing's between the versions in effect at each (1.0.0, then 1.1.0).
	type entry struct{ source, changeType, risk string }
	diff := func(from, to string) (map[entry]int, map[string]any) {
		d := s.get("/v1/intelligence/servers/io.example/live/history/diff?from=" + from + "&to=" + to)
		out := map[entry]int{}
		for _, c := range d["changes"].([]any) {
			m := c.(map[string]any)
			out[entry{m["source"].(string), m["change_type"].(string), m["risk"].(string)}]++
		}
		return out, d
	}
	all, d := diff(older, newer)
	for _, e := range []entry{
		{"listing", "version_bump", "low"}, {"surface", "tool_removed", "high"}, {"surface", "tool_added_destructive", "high"},
	} {
		if all[e] != 1 {
			t.Errorf("diff %s -> %s: got %v, want one %v", older, newer, all, e)
		}
	}
	if d["highest_risk"] != "high" || d["from_type"] != "surface_observation" || d["to_type"] != "surface_observation" {
		t.Errorf("diff: got %v", d)
	}
	// From the version 1.1.0 to the newest observation: the surface changes only (the older
	// observation was in effect when 1.1.0 was listed).
	surf, _ := diff("1.1.0", newer)
	if surf[entry{"surface", "tool_removed", "high"}] != 1 || surf[entry{"listing", "version_bump", "low"}] != 0 {
		t.Errorf("diff 1.1.0 -> %s: got %v, want the surface changes only", newer, surf)
	}
	// From 1.0.0, when no observation of the remote was in effect yet, no surface is compared.
	for _, to := range []string{"1.1.0", newer} {
		versions, _ := diff("1.0.0", to)
		for e := range versions {
			if e.source != "listing" {
				t.Errorf("diff 1.0.0 -> %s: got %v, want listing changes only", to, versions)
			}
		}
	}
	wantCoded(t, "an unknown observation", s.call(http.MethodGet,
		"/v1/intelligence/servers/io.example/live/history/diff?from=1.0.0&to=surface:0190a8f0-0000-7000-8000-000000000000", nil),
		http.StatusNotFound, "version_not_found")

	// The change feeds: the surface changes after the version bump, newest first.
	changes := items(t, s.get("/v1/intelligence/servers/io.example/live/changes?limit=100"))
	var order []string
	for _, c := range changes {
		order = append(order, c["source"].(string))
	}
	if len(order) < 3 || order[0] != "surface" || order[1] != "surface" || order[len(order)-1] != "listing" {
		t.Errorf("server changes: got sources %v, want the two surface changes first", order)
	}
	high := items(t, s.get("/v1/intelligence/changes/high-risk"))
	found := map[string]bool{}
	for _, c := range high {
		if c["source"] == "surface" && c["remote_url"] == remote && c["to_observation_id"] != "" {
			found[c["change_type"].(string)] = true
		}
	}
	if !found["tool_removed"] || !found["tool_added_destructive"] {
		t.Errorf("high-risk feed: got %v, want tool_removed and tool_added_destructive of %s", high, remote)
	}
	st := s.get("/v1/intelligence/servers/io.example/live")
	if lc, _ := st["latest_change"].(map[string]any); lc["source"] != "surface" || st["version"] != "1.1.0" {
		t.Errorf("server state: got %v, want 1.1.0 with a surface change as its latest", st)
	}
}

// TestTimelineRemoteSweep: with the sweep on, the listed remote is audited without any caller, and
// its tool-surface change reaches the high-risk feed.
func TestTimelineRemoteSweep(t *testing.T) {
	t.Parallel()
	s, fixture, _ := timelineStack(t, map[string]string{
		app.EnvPrefix + "SURFACE_SWEEP":          "true",
		app.EnvPrefix + "SURFACE_SWEEP_INTERVAL": "1s",
		app.EnvPrefix + "SURFACE_SWEEP_TICK":     "200ms",
	})
	eventually(t, "the sweep's first observation", func() bool {
		got, _ := s.timeline("/v1/intelligence/servers/io.example/live/history")
		return len(got) == 2 && got[0] == "surface 3"
	})
	fixture.rename()
	eventually(t, "the sweep's observation of the renamed tool", func() bool {
		for _, c := range items(t, s.get("/v1/intelligence/changes/high-risk")) {
			if c["change_type"] == "tool_removed" {
				return true
			}
		}
		return false
	})
}

// TestTimelineSurfaceChangeReachesTheWebhook: a tool-surface change reaches a server watch's webhook
// endpoint like a listing change, filtered by its change type.
func TestTimelineSurfaceChangeReachesTheWebhook(t *testing.T) {
	t.Parallel()
	s, fixture, remote := timelineStack(t, nil)
	tok := s.token("timeline-hooks", 600, "service:audit")
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote}, bearer(tok), http.StatusOK)

	hook := newReceiver(t, http.StatusNoContent)
	if r := s.call(http.MethodPost, "/v1/intelligence/webhooks/endpoints", map[string]any{"url": hook.URL + "/in"}); r.Status != http.StatusCreated {
		t.Fatalf("create endpoint: %d %s", r.Status, r.Body)
	}
	if r := s.call(http.MethodPost, "/v1/intelligence/servers/io.example/live/watch", map[string]any{"change_types": []string{"tool_removed"}}); r.Status != http.StatusCreated {
		t.Fatalf("watch: %d %s", r.Status, r.Body)
	}
	fixture.rename()
	s.Must(http.MethodPost, "/v1/audits/mcp", map[string]any{"url": remote}, bearer(tok), http.StatusOK)

	eventually(t, "the delivery of tool_removed", func() bool { return len(hook.got()) > 0 })
	for _, r := range hook.got() {
		body := string(r.body)
		if !strings.Contains(body, `"change_type":"tool_removed"`) || !strings.Contains(body, `"name":"live"`) {
			t.Errorf("delivery: got %s, want only the tool_removed change of io.example/live", body)
		}
	}
}
