package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

const (
	serverA = "/v1/intelligence/servers/io.example/a"
	serverC = "/v1/intelligence/servers/io.example/c"
)

// publishThree lists a, b (two versions) and c.
func publishThree(reg *registryfixture.Registry) {
	reg.Publish(registryfixture.Server("io.example/a", "1.0.0"))
	reg.Publish(registryfixture.Server("io.example/b", "1.0.0"))
	reg.Publish(registryfixture.Server("io.example/b", "1.1.0"))
	reg.Publish(registryfixture.Server("io.example/c", "1.0.0"))
}

// changeAAndC publishes a 1.1.0 on another host with a new required header, and deprecates c: five
// changes, three of them high.
func changeAAndC(reg *registryfixture.Registry) {
	reg.Advance(time.Hour)
	a := registryfixture.Server("io.example/a", "1.1.0")
	a["remotes"] = []any{map[string]any{"type": "streamable-http", "url": "https://mcp.other.example/weather",
		"headers": []any{map[string]any{"name": "X-Tenant", "isRequired": true}}}}
	reg.Publish(a)
	reg.SetStatus("io.example/c", "1.0.0", "deprecated", "moved to io.example/d")
}

// synced starts a stack, waits for the baseline, changes a and c, and waits until the sync loop has
// recorded the five changes.
func synced(t *testing.T) *registryStack {
	s := startRegistry(t, publishThree)
	eventually(t, "the baseline sync", func() bool { return s.call(http.MethodGet, serverA, nil).Status == http.StatusOK })
	changeAAndC(s.reg)
	eventually(t, "the incremental sync", func() bool { return len(items(t, s.get("/v1/intelligence/changes"))) == 5 })
	return s
}

func TestServerStateOverHTTP(t *testing.T) {
	t.Parallel()
	s := synced(t)
	a := s.get(serverA)
	for field, want := range map[string]any{
		"namespace": "io.example", "name": "a", "full_name": "io.example/a", "version": "1.1.0", "status": "active",
		"title": "Weather", "is_latest": true, "change_count": float64(4), "high_risk_change_count": float64(2),
	} {
		if a[field] != want {
			t.Errorf("%s: got %v, want %v", field, a[field], want)
		}
	}
	if repo, _ := a["repository"].(map[string]any); repo["url"] != "https://github.com/example/weather" || repo["id"] != "r-1001" {
		t.Errorf("repository: got %v", a["repository"])
	}
	pkg := a["packages"].([]any)[0].(map[string]any)
	env := pkg["environment_variables"].([]any)[0].(map[string]any)
	if pkg["registry_type"] != "npm" || pkg["identifier"] != "@example/weather" || env["name"] != "WEATHER_API_KEY" || env["is_secret"] != true {
		t.Errorf("packages: got %v", a["packages"])
	}
	remote := a["remotes"].([]any)[0].(map[string]any)
	if remote["url"] != "https://mcp.other.example/weather" || remote["headers"].([]any)[0].(map[string]any)["is_required"] != true {
		t.Errorf("remotes: got %v", a["remotes"])
	}
	if sj, _ := a["server_json"].(map[string]any); sj["name"] != "io.example/a" || sj["version"] != "1.1.0" {
		t.Errorf("server_json: got %v", a["server_json"])
	}
	latest, _ := a["latest_change"].(map[string]any)
	if latest["to_version"] != "1.1.0" || latest["id"] == "" {
		t.Errorf("latest_change: got %v", a["latest_change"])
	}
	for _, f := range []string{"first_seen_at", "last_seen_at", "published_at", "registry_updated_at", "snapshot_id", "content_hash", "registry"} {
		if a[f] == nil || a[f] == "" {
			t.Errorf("%s is missing from %v", f, a)
		}
	}
	if b := s.get("/v1/intelligence/servers/io.example/b"); b["version"] != "1.1.0" || b["latest_change"] != nil {
		t.Errorf("b: got version %v and latest_change %v, want 1.1.0 and none (baseline only)", b["version"], b["latest_change"])
	}
	if c := s.get(serverC); c["status"] != "deprecated" || c["status_message"] != "moved to io.example/d" {
		t.Errorf("c: got status %v (%v), want deprecated with its message", c["status"], c["status_message"])
	}
	for _, path := range []string{"/v1/intelligence/servers/io.example/nope", "/v1/intelligence/servers/io.example/nope/history",
		"/v1/intelligence/servers/io.example/nope/changes", "/v1/intelligence/servers/io.example/nope/history/diff?from=1&to=2",
		"/v1/intelligence/servers/bad%20namespace/a", "/v1/intelligence/servers/io.github.someone/weather.pro"} {
		wantCoded(t, path, s.call(http.MethodGet, path, nil), http.StatusNotFound, "server_not_found")
	}
}

func TestHistoryAndDiffOverHTTP(t *testing.T) {
	t.Parallel()
	s := synced(t)
	h := s.get(serverA + "/history")
	entries := items(t, h)
	if len(entries) != 2 || entries[0]["version"] != "1.1.0" || entries[1]["version"] != "1.0.0" || h["next_cursor"] != "" {
		t.Fatalf("history: got %v, want 1.1.0 then 1.0.0 on one page", h)
	}
	if entries[0]["server_json"] == nil || entries[0]["observed_at"] == nil || entries[0]["content_hash"] == entries[1]["content_hash"] {
		t.Errorf("history entry: got %v", entries[0])
	}
	// Keyset pages of one entry each cover the same history.
	page1 := s.get(serverA + "/history?limit=1")
	next, _ := page1["next_cursor"].(string)
	page2 := s.get(serverA + "/history?limit=1&cursor=" + url.QueryEscape(next))
	if items(t, page1)[0]["snapshot_id"] != entries[0]["snapshot_id"] || items(t, page2)[0]["snapshot_id"] != entries[1]["snapshot_id"] || page2["next_cursor"] != "" {
		t.Errorf("history pages: got %v then %v", page1, page2)
	}

	d := s.get(serverA + "/history/diff?from=1.0.0&to=1.1.0")
	if d["highest_risk"] != "high" || d["from"] != "1.0.0" || d["to"] != "1.1.0" {
		t.Errorf("diff: got %v", d)
	}
	got := map[string]string{}
	for _, c := range d["changes"].([]any) {
		c := c.(map[string]any)
		got[c["field"].(string)] = c["change_type"].(string) + "/" + c["risk"].(string)
		if c["summary"] == "" {
			t.Errorf("diff entry without summary: %v", c)
		}
	}
	want := map[string]string{
		"version": "version_bump/low", "remotes[0].url": "remote_host_changed/high",
		"remotes[0].headers.X-Tenant": "required_input_added/high", "packages[0].version": "package_version_changed/low",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff fields: got %v, want %v", got, want)
	}
	first := d["changes"].([]any)[1].(map[string]any)
	if first["old"] != "https://mcp.example.com/weather" || first["new"] != "https://mcp.other.example/weather" {
		t.Errorf("diff entry: got %v, want old and new URLs", first)
	}
	// The same version on both sides shows what changed in place.
	inPlace := s.get(serverC + "/history/diff?from=1.0.0&to=1.0.0")
	if cs := inPlace["changes"].([]any); len(cs) != 1 || cs[0].(map[string]any)["change_type"] != "status_deprecated" {
		t.Errorf("in-place diff: got %v", inPlace)
	}

	wantCoded(t, "unknown version", s.call(http.MethodGet, serverA+"/history/diff?from=1.0.0&to=9.9.9", nil), http.StatusNotFound, "version_not_found")
	r := s.call(http.MethodGet, serverA+"/history/diff", nil)
	wantValidation(t, "diff without versions", r, "query", "from")
	if !strings.Contains(string(r.Body), `"loc":["query","to"]`) {
		t.Errorf("diff without versions: got %s, want to reported too", r.Body)
	}
	wantValidation(t, "diff without to", s.call(http.MethodGet, serverA+"/history/diff?from=1.0.0", nil), "query", "to")
}

func TestChangeFeedsOverHTTP(t *testing.T) {
	t.Parallel()
	s := synced(t)
	all := items(t, s.get("/v1/intelligence/changes"))
	// Keyset pages of two walk the same feed, newest first.
	var walked []any
	path := "/v1/intelligence/changes?limit=2"
	for range 10 {
		page := s.get(path)
		for _, it := range items(t, page) {
			walked = append(walked, it["id"])
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		path = "/v1/intelligence/changes?limit=2&cursor=" + url.QueryEscape(next)
	}
	var ids []any
	for _, it := range all {
		ids = append(ids, it["id"])
		for _, f := range []string{"namespace", "name", "from_version", "to_version", "field", "change_type", "risk", "summary", "detected_at", "from_snapshot_id", "to_snapshot_id"} {
			if it[f] == nil || it[f] == "" {
				t.Errorf("change %v lacks %s", it, f)
			}
		}
	}
	if fmt.Sprint(walked) != fmt.Sprint(ids) {
		t.Errorf("paged feed: got %v, want %v", walked, ids)
	}

	dep := items(t, s.get("/v1/intelligence/changes?change_type=status_deprecated"))
	if len(dep) != 1 || dep[0]["name"] != "c" || dep[0]["old_value"] != "active" || dep[0]["new_value"] != "deprecated" {
		t.Errorf("status_deprecated feed: got %v", dep)
	}
	high := items(t, s.get("/v1/intelligence/changes/high-risk"))
	if len(high) != 3 {
		t.Errorf("high-risk feed: got %d changes, want 3", len(high))
	}
	for _, c := range high {
		if c["risk"] != "high" {
			t.Errorf("high-risk feed has %v", c)
		}
	}
	a := items(t, s.get(serverA+"/changes"))
	onlyA := items(t, s.get(serverA+"/changes?change_type=remote_host_changed"))
	if len(a) != 4 || len(onlyA) != 1 || onlyA[0]["field"] != "remotes[0].url" {
		t.Errorf("a's changes: got %d, filtered %v", len(a), onlyA)
	}
	if none := items(t, s.get("/v1/intelligence/changes?change_type=not_a_type")); len(none) != 0 {
		t.Errorf("unknown change type: got %v, want no change", none)
	}
	if got := len(items(t, s.get("/v1/intelligence/changes?limit=200"))); got != 5 {
		t.Errorf("limit=200: got %d changes, want 5", got)
	}
}

func TestListLimitsAndCursorsAreValidated(t *testing.T) {
	t.Parallel()
	s := startRegistry(t, publishThree)
	eventually(t, "the baseline sync", func() bool { return s.call(http.MethodGet, serverA, nil).Status == http.StatusOK })
	for _, path := range []string{
		serverA + "/history?limit=0", serverA + "/history?limit=101", serverA + "/changes?limit=101",
		"/v1/intelligence/changes?limit=0", "/v1/intelligence/changes?limit=201", "/v1/intelligence/changes/high-risk?limit=201",
		"/v1/intelligence/changes?limit=ten",
	} {
		wantValidation(t, path, s.call(http.MethodGet, path, nil), "query", "limit")
	}
	for _, path := range []string{"/v1/intelligence/changes?cursor=garbage", serverA + "/history?cursor=czE6LTE"} {
		wantValidation(t, path, s.call(http.MethodGet, path, nil), "query", "cursor")
	}
	for _, path := range []string{serverA + "/history?limit=100", serverA + "/changes?limit=1", "/v1/intelligence/changes/high-risk?limit=200"} {
		s.get(path)
	}
}

func TestCompareBatchOverHTTP(t *testing.T) {
	t.Parallel()
	s := synced(t)
	r := s.call(http.MethodPost, "/v1/intelligence/compare/batch", map[string]any{"items": []any{
		map[string]any{"namespace": "io.example", "name": "a"},
		map[string]any{"namespace": "io.example", "name": "a", "from": "1.1.0", "to": "1.0.0"},
		map[string]any{"namespace": "io.example", "name": "c"},
		map[string]any{"namespace": "io.example", "name": "missing"},
		map[string]any{"namespace": "io.example", "name": "a", "from": "0.0.1"},
	}})
	if r.Status != http.StatusOK {
		t.Fatalf("got %d %s, want 200", r.Status, r.Body)
	}
	res := items(t, r.Object(t))
	if len(res) != 5 {
		t.Fatalf("got %d results, want 5", len(res))
	}
	if res[0]["from"] != "1.0.0" || res[0]["to"] != "1.1.0" || res[0]["highest_risk"] != "high" || len(res[0]["changes"].([]any)) != 4 {
		t.Errorf("defaults (previous version to current): got %v", res[0])
	}
	if back := res[1]; back["index"] != float64(1) || back["changes"].([]any)[0].(map[string]any)["change_type"] != "version_downgrade" {
		t.Errorf("backwards compare: got %v, want a version downgrade first", back)
	}
	if c := res[2]; c["from"] != "1.0.0" || c["to"] != "1.0.0" || c["highest_risk"] != "high" {
		t.Errorf("single-version server: got %v, want its in-place deprecation", c)
	}
	if e, _ := res[3]["error"].(map[string]any); e["error"] != "server_not_found" || e["message"] == "" {
		t.Errorf("unknown server: got %v", res[3])
	}
	if e, _ := res[4]["error"].(map[string]any); e["error"] != "version_not_found" {
		t.Errorf("unknown version: got %v", res[4])
	}

	wantValidation(t, "empty", s.call(http.MethodPost, "/v1/intelligence/compare/batch", map[string]any{"items": []any{}}), "body", "items")
	wantValidation(t, "no body", s.call(http.MethodPost, "/v1/intelligence/compare/batch", map[string]any{}), "body", "items")
	many := make([]any, 51)
	for i := range many {
		many[i] = map[string]any{"namespace": "io.example", "name": "a"}
	}
	wantValidation(t, "51 items", s.call(http.MethodPost, "/v1/intelligence/compare/batch", map[string]any{"items": many}), "body", "items")
	wantValidation(t, "item without name", s.call(http.MethodPost, "/v1/intelligence/compare/batch",
		map[string]any{"items": []any{map[string]any{"namespace": "io.example"}}}), "body", "items", 0, "name")
	wantValidation(t, "malformed JSON", s.call(http.MethodPost, "/v1/intelligence/compare/batch", `{"items": [`), "body")
}

func TestChangesArePublishedOnIntelChangeSubjects(t *testing.T) {
	t.Parallel()
	s := synced(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := s.Bus.JS.Stream(ctx, s.Bus.StreamName(bus.IntelChanges.Name))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "five events in the stream", func() bool {
		info, err := stream.Info(ctx)
		return err == nil && info.State.Msgs == 5
	})
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(5, jetstream.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, c := range items(t, s.get("/v1/intelligence/changes")) {
		byID[c["id"].(string)] = c
	}
	n := 0
	for msg := range batch.Messages() {
		n++
		var ev verificationv1.IntelChange
		if err := proto.Unmarshal(msg.Data(), &ev); err != nil {
			t.Fatal(err)
		}
		c, ok := byID[ev.GetChangeId()]
		if !ok {
			t.Errorf("event %s is no stored change", ev.GetChangeId())
			continue
		}
		if msg.Headers().Get(jetstreamMsgID) != ev.GetChangeId() || msg.Subject() != s.Bus.Subject("intel.change."+ev.GetRisk()) {
			t.Errorf("event %s: got id header %q on %s", ev.GetChangeId(), msg.Headers().Get(jetstreamMsgID), msg.Subject())
		}
		if ev.GetChangeType() != c["change_type"] || ev.GetRisk() != c["risk"] || ev.GetField() != c["field"] ||
			ev.GetNamespace() != "io.example" || ev.GetToVersion() != c["to_version"] || ev.GetDetectedAt() == nil {
			t.Errorf("event %v does not match change %v", &ev, c)
		}
	}
	if n != 5 {
		t.Errorf("got %d events, want 5", n)
	}
}

// jetstreamMsgID is the header JetStream deduplicates on; the outbox sets it to the event id.
const jetstreamMsgID = "Nats-Msg-Id"

func TestIntelligenceSettings(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (app.IntelligenceSettings, error) {
		var s app.IntelligenceSettings
		err := config.Load(func(k string) string { return env[k] }, "VERIFICATION_", &s)
		return s, err
	}
	s, err := load(nil)
	if err != nil || s.RegistryURLs != "" || s.RegistryPollInterval != 5*time.Minute || s.RegistryPageSize != 100 {
		t.Errorf("defaults: got %+v, %v", s, err)
	}
	if _, err := load(map[string]string{"VERIFICATION_REGISTRY_URLS": "https://registry.modelcontextprotocol.io, https://mirror.example/mcp/"}); err != nil {
		t.Errorf("two registries: got %v", err)
	}
	_, err = load(map[string]string{
		"VERIFICATION_REGISTRY_URLS": "ftp://x", "VERIFICATION_ALLOW_PRIVATE_CIDRS": "0.0.0.0/0",
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "10ms", "VERIFICATION_REGISTRY_PAGE_SIZE": "500",
	})
	for _, v := range []string{"VERIFICATION_REGISTRY_URLS", "VERIFICATION_ALLOW_PRIVATE_CIDRS", "VERIFICATION_REGISTRY_POLL_INTERVAL", "VERIFICATION_REGISTRY_PAGE_SIZE"} {
		var ve *config.VarError
		found := false
		for _, e := range flatten(err) {
			if errors.As(e, &ve) && ve.Var == v {
				found = true
			}
		}
		if !found {
			t.Errorf("got %v, want a problem with %s", err, v)
		}
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
