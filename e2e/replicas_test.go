package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

// registryPollInterval is VERIFICATION_REGISTRY_POLL_INTERVAL in these tests: long enough that the
// verification replicas can be started a third of an interval apart, as replicas of a rolling
// deployment are, short enough to watch a few polls.
const registryPollInterval = 6 * time.Second

// TestReplicas runs three processes of each service, on one database per service and one NATS
// namespace, and shows that background work runs once, that each event is applied once and that the
// global limits hold when requests are spread over the replicas. See e2e/README.md.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs nine service processes")
	}
	bin := buildBinaries(t)
	namespace := natstest.Namespace(t)
	nc := connectBus(t, namespace)

	docs := newDocServer(t, 150*time.Millisecond)
	registry := newFakeRegistry(t)
	for i := range 6 {
		registry.publish(registryServer(fmt.Sprintf("io.example/replica-%d", i), "first description"))
	}
	hooks := newHookReceiver(t, "/retried")

	loopback := "127.0.0.0/8,::1"
	ingestion := newReplicaSet(t, bin, "ingestion", pgtest.NewDatabase(t), map[string]string{
		"INGESTION_ALLOW_PRIVATE_CIDRS": loopback,
		"INGESTION_SCHEDULER_INTERVAL":  "1s",
		"INGESTION_FETCH_TIMEOUT":       "10s",
		"NATS_NAMESPACE":                namespace,
	})
	scoring := newReplicaSet(t, bin, "scoring", pgtest.NewDatabase(t), map[string]string{
		"SCORING_SIGNAL_REFRESH_INTERVAL": "1s",
		"SCORING_USAGE_FLUSH_INTERVAL":    "100ms",
		"NATS_NAMESPACE":                  namespace,
	})
	verification := newReplicaSet(t, bin, "verification", pgtest.NewDatabase(t), map[string]string{
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":                "127.0.0.0/8",
		"VERIFICATION_REGISTRY_URLS":                      registry.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL":             registryPollInterval.String(),
		"VERIFICATION_REGISTRY_MAX_ATTEMPTS":              "1",
		"VERIFICATION_WEBHOOK_SCHEDULER_INTERVAL":         "1s",
		"VERIFICATION_WEBHOOK_RETRY_BASE":                 "1s",
		"VERIFICATION_WEBHOOK_RETRY_MAX":                  "2s",
		"VERIFICATION_WEBHOOK_TIMEOUT":                    "5s",
		"VERIFICATION_WATCH_LIMIT":                        "4",
		"VERIFICATION_WEBHOOK_ENDPOINT_LIMIT":             "3",
		"VERIFICATION_WATCH_API_LIMIT":                    "3",
		"VERIFICATION_FEED_EXPORT_INTERVAL":               "1m", // the shortest allowed
		"VERIFICATION_ANALYTICS_EVENTS_PER_CLIENT_MINUTE": "5",
		// Watch runs audit their targets; no check here needs them, and the targets below are public
		// addresses the test machine should not be made to call.
		"VERIFICATION_WATCH_SCHEDULER": "false",
		"NATS_NAMESPACE":               namespace,
	})

	// Ingestion and scoring start together; verification's replicas are started a third of a poll
	// interval apart, so that their poll loops tick at different moments, as after a rollout.
	started := time.Now()
	for range 3 {
		ingestion.start()
		scoring.start()
	}
	v1 := verification.start()
	verification.ready(v1)
	waitFor(t, 60*time.Second, "the first registry poll", func() bool { return len(registry.pollTimes()) > 0 })
	first := registry.pollTimes()[0]
	// A replica's loop polls (or skips) as soon as it starts, then every interval: replica 2 ticks about
	// 0.3 and replica 3 about 0.7 of an interval after replica 1. A replica that is not the first
	// starts in about half a second (the migrations are applied); the second's start time is then
	// measured and used for the third.
	startup := 500 * time.Millisecond
	for i, phase := range []float64{0.3, 0.7} {
		time.Sleep(time.Until(first.Add(time.Duration(phase * float64(registryPollInterval))).Add(-startup)))
		launched := time.Now()
		p := verification.start()
		verification.ready(p)
		startup = time.Since(launched)
		t.Logf("verification-%d ticks %s after verification-1", i+2, time.Since(first).Round(10*time.Millisecond))
	}
	for _, set := range []*replicaSet{ingestion, scoring} {
		for _, p := range set.procs {
			set.ready(p)
		}
	}
	t.Logf("nine replicas ready %s after the first start", time.Since(started).Round(time.Millisecond))

	t.Run("work", func(t *testing.T) {
		t.Run("ingestion discovery runs once per due time", func(t *testing.T) {
			t.Parallel()
			testDiscoveryOncePerDueTime(t, ingestion, docs)
		})
		t.Run("policy events are applied once by scoring", func(t *testing.T) {
			t.Parallel()
			testPolicyEventsAppliedOnce(t, ingestion, scoring, docs, nc)
		})
		t.Run("registry polls once per due time", func(t *testing.T) {
			t.Parallel()
			testRegistryPollsOncePerDueTime(t, verification, registry)
		})
		t.Run("data-feed export runs once per interval", func(t *testing.T) {
			t.Parallel()
			testFeedExportOncePerInterval(t, verification)
		})
		t.Run("webhook deliveries are sent once", func(t *testing.T) {
			t.Parallel()
			testWebhooksSentOnce(t, verification, registry, hooks)
		})
		t.Run("global limits hold across replicas", func(t *testing.T) {
			t.Parallel()
			testGlobalLimits(t, verification, scoring)
		})
	})

	t.Run("SIGTERM stops every replica with status 0", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, set := range []*replicaSet{ingestion, scoring, verification} {
			wg.Add(1)
			go func() { defer wg.Done(); set.stopAll(t) }()
		}
		wg.Wait()
	})
}

// testDiscoveryOncePerDueTime: sources due at once are each fetched by one replica, once; when they
// fall due again, once more.
func testDiscoveryOncePerDueTime(t *testing.T, ingestion *replicaSet, docs *docServer) {
	const n = 10 // the scheduler's batch: one tick of one replica could take them all
	var ids, paths []string
	for i := range n {
		path := fmt.Sprintf("/scheduled-%d.html", i)
		docs.set(path, replicaPolicyV1)
		src := must(t, http.StatusCreated, "POST", ingestion.url()+"/v1/sources", map[string]any{
			"organization": "Scheduled Health Plan", "program": "Commercial", "jurisdiction": "US-CA",
			"allowed_hosts": []string{"localhost"}, "adapter": "literal_url",
			"adapter_config": map[string]any{"url": docs.url(path)}, "cadence_seconds": 3600,
			"terms_review_state": "approved",
		}, admin()...)
		ids, paths = append(ids, src["id"].(string)), append(paths, path)
	}
	runs := func(id string) int {
		return queryInt(t, ingestion.dbURL, `SELECT count(*) FROM discovery_runs WHERE source_id = $1 AND trigger = 'scheduled'`, id)
	}
	scheduledHits := func() int {
		total := 0
		for _, p := range paths {
			total += docs.hitCount(p)
		}
		return total
	}
	var twice []string
	check := func(due int) {
		t.Helper()
		waitFor(t, 60*time.Second, fmt.Sprintf("every source fetched %d times", due), func() bool {
			for _, p := range paths {
				if docs.hitCount(p) < due {
					return false
				}
			}
			return true
		})
		// Three seconds without a fetch: three ticks of every replica's scheduler.
		quiet(t, 3*time.Second, 60*time.Second, "the fetches", scheduledHits)
		for i, p := range paths {
			hits, runs := docs.hitCount(p), runs(ids[i])
			if hits != runs {
				t.Errorf("%s: fetched %d times by %d scheduled runs, want one fetch per run", p, hits, runs)
			}
			if runs > due {
				twice = append(twice, fmt.Sprintf("source %d: %d scheduled runs for %d due times", i, runs, due))
			}
		}
	}
	check(1)
	// The next due time, brought forward rather than waited for (the cadence is at least 300 s).
	execSQL(t, ingestion.dbURL, `UPDATE sources SET next_run_at = now() WHERE id = ANY($1::uuid[])`, ids)
	check(2)
	if len(twice) > 0 {
		t.Errorf("sources ran more than once per due time: %s", strings.Join(twice, "; "))
	}
}

// testPolicyEventsAppliedOnce: the change events of manual discovery runs (one replica each) reach
// scoring's three replicas, which share one durable consumer: each is stored once and acknowledged
// without redelivery.
func testPolicyEventsAppliedOnce(t *testing.T, ingestion, scoring *replicaSet, docs *docServer, nc *bus.Bus) {
	const org = "Replica Health Plan"
	var sources []string
	for i := range 3 {
		path := fmt.Sprintf("/manual-%d.html", i)
		docs.set(path, replicaPolicyV1)
		src := must(t, http.StatusCreated, "POST", ingestion.url()+"/v1/sources", map[string]any{
			"organization": org, "program": fmt.Sprintf("Program %d", i), "jurisdiction": "US-NY",
			"allowed_hosts": []string{"localhost"}, "adapter": "literal_url",
			"adapter_config": map[string]any{"url": docs.url(path)}, "cadence_seconds": 3600,
			"terms_review_state": "approved", "enabled": false, // manual runs only
		}, admin()...)
		sources = append(sources, src["id"].(string))
	}
	for _, doc := range []string{replicaPolicyV1, replicaPolicyV2} {
		for i, id := range sources {
			docs.set(fmt.Sprintf("/manual-%d.html", i), doc)
			run := must(t, http.StatusCreated, "POST", ingestion.url()+"/v1/sources/"+id+"/discovery-runs", map[string]any{}, admin()...)
			if run["status"] != "SUCCEEDED" {
				t.Fatalf("discovery run of %s: got %v, want SUCCEEDED", id, run)
			}
		}
	}
	var published []string
	events := must(t, http.StatusOK, "GET", ingestion.url()+"/v1/change-events?status=AUTO_PUBLISHED&limit=100", nil, admin()...)
	for _, it := range events["items"].([]any) {
		ev := it.(map[string]any)
		if slices.Contains(sources, ev["source_id"].(string)) {
			published = append(published, ev["id"].(string))
		}
	}
	if len(published) < len(sources) {
		t.Fatalf("got %d published change events of %d sources, want at least one each", len(published), len(sources))
	}
	slices.Sort(published)

	var stored []string
	signals := "/v1/policy-signals?limit=100&organization=" + url.QueryEscape(org)
	waitFor(t, 60*time.Second, fmt.Sprintf("%d policy signals in scoring", len(published)), func() bool {
		stored = nil
		for _, it := range must(t, http.StatusOK, "GET", scoring.url()+signals, nil, admin()...)["signals"].([]any) {
			stored = append(stored, it.(map[string]any)["change_event_id"].(string))
		}
		return len(stored) >= len(published)
	})
	slices.Sort(stored)
	if !slices.Equal(stored, published) {
		t.Errorf("scoring's signals: got %v, want each published change event once: %v", stored, published)
	}
	// Every replica reads the same rows.
	for _, p := range scoring.procs {
		if got := len(must(t, http.StatusOK, "GET", p.url+signals, nil, admin()...)["signals"].([]any)); got != len(published) {
			t.Errorf("%s lists %d signals, want %d", p.name, got, len(published))
		}
	}

	// The consumer the replicas share got each message once: nothing redelivered, nothing pending.
	checkConsumedOnce(t, nc, "POLICY_CHANGES", "scoring-policy-signals")
}

// testRegistryPollsOncePerDueTime: whichever replica's loop ticks, the registry is polled once per
// interval, never again before the interval since the last poll has passed.
func testRegistryPollsOncePerDueTime(t *testing.T, verification *replicaSet, registry *fakeRegistry) {
	// Watch two intervals after the last replica started.
	end := time.Now().Add(2*registryPollInterval + time.Second)
	waitFor(t, 3*registryPollInterval+time.Minute, "two poll intervals", func() bool { return time.Now().After(end) })
	polls := registry.pollTimes()
	if len(polls) < 3 {
		t.Fatalf("got %d polls in %s, want one per interval of %s", len(polls), polls[len(polls)-1].Sub(polls[0]), registryPollInterval)
	}
	var gaps []string
	early := 0
	for i := 1; i < len(polls); i++ {
		gap := polls[i].Sub(polls[i-1])
		gaps = append(gaps, gap.Round(10*time.Millisecond).String())
		// A registry is due a whole interval after its last poll started, less 5 % (the service's
		// slack for its ticker), and 250 ms more for the clocks: the replica measures from its own
		// poll's record.
		if gap < registryPollInterval-registryPollInterval/20-250*time.Millisecond {
			early++
		}
	}
	t.Logf("gaps between polls: %v", gaps)
	if early > 0 {
		t.Errorf("%d of %d polls came before the interval (%s) since the previous poll had passed: gaps %v",
			early, len(polls)-1, registryPollInterval, gaps)
	}
}

// testFeedExportOncePerInterval: the data feeds are exported once per interval, not once per replica.
// The replicas' first exports fall due one interval after each started, seconds apart.
func testFeedExportOncePerInterval(t *testing.T, verification *replicaSet) {
	org := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations", map[string]any{"name": "Feed Org"}, admin()...)
	key := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations/"+org["id"].(string)+"/api-keys",
		map[string]any{"name": "e2e"}, admin()...)["api_key"].(string)
	artifacts := func() map[string]int {
		out := map[string]int{}
		for _, it := range must(t, http.StatusOK, "GET", verification.url()+"/v1/intelligence/data", nil, bearerHeader(key)...)["datasets"].([]any) {
			d := it.(map[string]any)
			var n int
			_, _ = fmt.Sscan(fmt.Sprint(d["artifact_count"]), &n) // an int64: a JSON string
			out[d["name"].(string)] = n
		}
		return out
	}
	total := func() int {
		n := 0
		for _, c := range artifacts() {
			n += c
		}
		return n
	}
	waitFor(t, 2*time.Minute, "the first export", func() bool { return total() > 0 })
	// The other replicas' exports fall due within the next 5 s (their starts' spread).
	quiet(t, 8*time.Second, time.Minute, "the artifacts", total)
	var extra []string
	for name, n := range artifacts() {
		if n != 2 {
			extra = append(extra, fmt.Sprintf("%s: %d artifacts", name, n))
		}
	}
	if len(extra) > 0 {
		t.Errorf("one interval's export, want 2 artifacts per dataset (JSON Lines and CSV): %s", strings.Join(extra, ", "))
	}
}

// testWebhooksSentOnce: each change on a watched server is delivered once to each endpoint, whichever
// replica polled, matched and worked the delivery.
func testWebhooksSentOnce(t *testing.T, verification *replicaSet, registry *fakeRegistry, hooks *hookReceiver) {
	org := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations", map[string]any{"name": "Webhook Org"}, admin()...)
	key := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations/"+org["id"].(string)+"/api-keys",
		map[string]any{"name": "e2e"}, admin()...)["api_key"].(string)
	// Two endpoints that answer 200, and one that fails each delivery's first attempt: its retry is
	// scheduled in PostgreSQL and enqueued by whichever replica's retry scheduler claims it.
	paths := map[string]int{"/a": 1, "/b": 1, "/retried": 2} // requests per delivery
	for path := range paths {
		must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/webhooks/endpoints",
			map[string]any{"url": hooks.URL + path, "event_types": []string{"intel.change"}}, bearerHeader(key)...)
	}
	const watched = 4
	for i := range watched {
		must(t, http.StatusCreated, "POST", verification.url()+fmt.Sprintf("/v1/intelligence/servers/io.example/replica-%d/watch", i),
			map[string]any{}, bearerHeader(key)...)
	}
	for i := range 6 {
		registry.publish(registryServer(fmt.Sprintf("io.example/replica-%d", i), "second description"))
	}
	want := watched * (1 + 1 + 2) // one change per watched server, to each endpoint, one retried
	waitFor(t, 60*time.Second, fmt.Sprintf("%d delivery requests", want), func() bool { return hooks.totalCount() >= want })
	// Quiet for longer than a poll interval: a second poll of the same listing must not deliver again.
	quiet(t, registryPollInterval+2*time.Second, 60*time.Second, "the deliveries", hooks.totalCount)
	got, total := hooks.snapshot()
	if len(got) != watched*len(paths) || total != want {
		t.Errorf("got %d requests for %d (endpoint, webhook-id) pairs, want %d for %d: %v", total, len(got), want, watched*len(paths), got)
	}
	for k, n := range got {
		path, _, _ := strings.Cut(k, " ")
		if n != paths[path] {
			t.Errorf("delivery %q: %d requests, want %d", k, n, paths[path])
		}
	}
	// Each change was recorded once, by whichever replica polled.
	changes := must(t, http.StatusOK, "GET", verification.url()+"/v1/intelligence/servers/io.example/replica-0/changes", nil, bearerHeader(key)...)
	if n := len(changes["items"].([]any)); n != 1 {
		t.Errorf("changes of io.example/replica-0: got %d, want 1: %v", n, changes)
	}
}

// testGlobalLimits: the limits documented as global hold when the same caller's requests are spread
// over the replicas at once.
func testGlobalLimits(t *testing.T, verification, scoring *replicaSet) {
	// concurrently sends n requests round-robin over the replicas at once and counts the statuses.
	concurrently := func(n int, send func(i int) reply) map[int]int {
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				r := send(i) // send reports failures with t.Error: it runs outside the test's goroutine
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		return statuses
	}
	t.Run("scoring trial keys per client address", func(t *testing.T) {
		got := concurrently(8, func(int) reply {
			r := try(t, "POST", scoring.url()+"/v1/keys/trial", nil)
			if r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After: %s", r.body)
			}
			return r
		})
		if got[http.StatusCreated] != 5 || got[http.StatusTooManyRequests] != 3 {
			t.Errorf("8 trial keys asked at once from one address: got statuses %v, want 5 × 201 and 3 × 429 (SCORING_TRIAL_KEYS_PER_ADDRESS)", got)
		}
	})
	t.Run("scoring failed sign-ins per e-mail", func(t *testing.T) {
		const email, password = "replicas@example.com", "correct horse battery staple"
		must(t, http.StatusCreated, "POST", scoring.url()+"/v1/control-plane/auth/signup",
			map[string]any{"email": email, "password": password, "workspace_name": "Replicas"})
		got := concurrently(8, func(int) reply {
			return try(t, "POST", scoring.url()+"/v1/control-plane/auth/login", map[string]any{"email": email, "password": "wrong password, repeated"})
		})
		if got[http.StatusUnauthorized] != 5 || got[http.StatusTooManyRequests] != 3 {
			t.Errorf("8 wrong passwords at once: got statuses %v, want 5 × 401 and 3 × 429 (5 failed sign-ins per e-mail)", got)
		}
		// Throttled on every replica, even with the right password.
		for _, p := range scoring.procs {
			if r := call(t, "POST", p.url+"/v1/control-plane/auth/login", map[string]any{"email": email, "password": password}); r.status != http.StatusTooManyRequests {
				t.Errorf("%s: the right password after the limit: got %d %s, want 429", p.name, r.status, r.body)
			}
		}
	})
	t.Run("scoring trial quota converges across replicas", func(t *testing.T) {
		issued := must(t, http.StatusCreated, "POST", scoring.url()+"/v1/apikeys/issue", map[string]any{"plan": "trial", "name": "quota"}, admin()...)
		key, keyID := issued["api_key"].(string), issued["key_id"].(string)
		quota := int(issued["monthly_included_calls"].(float64))
		// The month's usage so far, two calls short of the quota, as if the key had been used for weeks.
		const month = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM')`
		execSQL(t, scoring.dbURL, `INSERT INTO usage_counters (key_id, period, calls) VALUES ($1, `+month+`, $2)`, keyID, quota-2)
		score := func(base string) reply {
			return call(t, "POST", base+"/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": map[string]any{
				"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567, "payer_id": 60054,
				"cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0, "place_of_service": "11",
			}}, bearerHeader(key)...)
		}
		admitted := 0
		for _, p := range scoring.procs {
			switch r := score(p.url); r.status {
			case http.StatusOK:
				admitted++
			case http.StatusPaymentRequired:
			default:
				t.Fatalf("%s: score got %d %s, want 200 or 402", p.name, r.status, r.body)
			}
		}
		// Each replica rereads the key's persisted usage every 10 flush intervals (1 s here): then every
		// replica refuses. Until then a replica may admit what others already used (README, "Keys,
		// limits and metering").
		refusing := map[string]bool{}
		waitFor(t, 30*time.Second, "every replica to answer 402", func() bool {
			for _, p := range scoring.procs {
				if refusing[p.name] {
					continue
				}
				switch r := score(p.url); r.status {
				case http.StatusOK:
					admitted++
				case http.StatusPaymentRequired:
					refusing[p.name] = true
				case http.StatusTooManyRequests: // the key's rate on that replica; try again
				default:
					t.Fatalf("%s: score got %d %s, want 200 or 402", p.name, r.status, r.body)
				}
			}
			return len(refusing) == len(scoring.procs)
		})
		if admitted < 2 || admitted > 2*len(scoring.procs) {
			t.Errorf("admitted %d calls with 2 left, want 2 to %d (at most what each replica read as left)", admitted, 2*len(scoring.procs))
		}
		t.Logf("admitted %d calls with 2 left of the quota across %d replicas", admitted, len(scoring.procs))
		// Every admitted call is metered once, whichever replica admitted it.
		var calls int
		waitFor(t, 10*time.Second, "the usage to be flushed", func() bool {
			calls = queryInt(t, scoring.dbURL, `SELECT calls::int FROM usage_counters WHERE key_id = $1 AND period = `+month, keyID)
			return calls == quota-2+admitted
		})
	})
	t.Run("verification public analytics events per client address", func(t *testing.T) {
		// The window is the clock's minute: a burst that straddled two would be counted in both.
		if left := time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)); left < 3*time.Second {
			time.Sleep(left + 100*time.Millisecond)
		}
		got := concurrently(8, func(int) reply {
			r := try(t, "POST", verification.url()+"/api/analytics/events", map[string]any{"name": "page_viewed", "page": "/claim"})
			if r.status == http.StatusTooManyRequests && (!strings.Contains(string(r.body), "contact_rate_limited") || r.header.Get("Retry-After") == "") {
				t.Errorf("a 429 without contact_rate_limited and Retry-After: %s", r.body)
			}
			return r
		})
		if got[http.StatusOK] != 5 || got[http.StatusTooManyRequests] != 3 {
			t.Errorf("8 events at once from one address: got statuses %v, want 5 × 200 and 3 × 429 (VERIFICATION_ANALYTICS_EVENTS_PER_CLIENT_MINUTE)", got)
		}
	})
	t.Run("verification watch API watches per organization", func(t *testing.T) {
		org := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations", map[string]any{"name": "Watch API Org"}, admin()...)
		key := must(t, http.StatusCreated, "POST", verification.url()+"/v1/watch/api-keys", map[string]any{
			"organizationId": org["id"], "name": "e2e", "scopes": []string{"watch:read", "watch:write"},
		}, admin()...)["apiKey"].(string)
		got := concurrently(6, func(i int) reply {
			r := try(t, "POST", verification.url()+"/v1/watch/watches", map[string]any{
				"targetUrl": fmt.Sprintf("https://93.184.216.%d/mcp", 10+i), "evaluator": "mcp",
			}, bearerHeader(key)...)
			if r.status == http.StatusForbidden && !strings.Contains(string(r.body), "watch_limit_reached") {
				t.Errorf("a 403 that is not watch_limit_reached: %s", r.body)
			}
			return r
		})
		if got[http.StatusCreated] != 3 || got[http.StatusForbidden] != 3 {
			t.Errorf("6 watches at once: got statuses %v, want 3 × 201 and 3 × 403 (VERIFICATION_WATCH_API_LIMIT)", got)
		}
	})
	t.Run("verification webhook endpoints per organization", func(t *testing.T) {
		org := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations", map[string]any{"name": "Endpoint Org"}, admin()...)
		key := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations/"+org["id"].(string)+"/api-keys",
			map[string]any{"name": "e2e"}, admin()...)["api_key"].(string)
		got := concurrently(6, func(i int) reply {
			return try(t, "POST", verification.url()+"/v1/intelligence/webhooks/endpoints",
				map[string]any{"url": fmt.Sprintf("https://hooks.example.com/e2e-%d", i)}, bearerHeader(key)...)
		})
		if got[http.StatusCreated] != 3 || got[http.StatusForbidden] != 3 {
			t.Errorf("6 endpoints at once: got statuses %v, want 3 × 201 and 3 × 403 (VERIFICATION_WEBHOOK_ENDPOINT_LIMIT)", got)
		}
	})
	t.Run("verification server watches per organization", func(t *testing.T) {
		org := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations", map[string]any{"name": "Watcher Org"}, admin()...)
		key := must(t, http.StatusCreated, "POST", verification.url()+"/v1/intelligence/organizations/"+org["id"].(string)+"/api-keys",
			map[string]any{"name": "e2e"}, admin()...)["api_key"].(string)
		got := concurrently(6, func(i int) reply {
			return try(t, "POST", verification.url()+fmt.Sprintf("/v1/intelligence/servers/io.example/replica-%d/watch", i), map[string]any{}, bearerHeader(key)...)
		})
		if got[http.StatusCreated] != 4 || got[http.StatusForbidden] != 2 {
			t.Errorf("6 server watches at once: got statuses %v, want 4 × 201 and 2 × 403 (VERIFICATION_WATCH_LIMIT)", got)
		}
	})
}

// checkConsumedOnce waits until the durable consumer has nothing pending, then checks that it delivered
// each message of the stream once: as many deliveries as stream messages, none redelivered.
func checkConsumedOnce(t *testing.T, nc *bus.Bus, stream, consumer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var info *jetstream.ConsumerInfo
	waitFor(t, 60*time.Second, consumer+" to acknowledge every message", func() bool {
		c, err := nc.JS.Consumer(ctx, nc.StreamName(stream), consumer)
		if err != nil {
			t.Logf("consumer %s: %v", consumer, err)
			return false
		}
		info, err = c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	if info.NumRedelivered != 0 || info.Delivered.Consumer != info.Delivered.Stream || info.Delivered.Stream == 0 {
		t.Errorf("consumer %s of %s: %d deliveries of %d messages, %d redelivered; want each message delivered once",
			consumer, stream, info.Delivered.Consumer, info.Delivered.Stream, info.NumRedelivered)
	}
}
