package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

const (
	billingStripeKey     = "sk_test_reliability_billing"
	billingWebhookSecret = "whsec_test_reliability_billing"
	billingPriceID       = "price_test_team_plan"
	billingWebhookPath   = "/v1/agent-reliability/billing/webhook"
)

// billingStripe is a loopback peer for the one Stripe endpoint the service calls, POST
// /v1/checkout/sessions: stripe-go talks to it over HTTP as to api.stripe.com, and the test reads
// back the form it sent.
type billingStripe struct {
	*httptest.Server
	mu    sync.Mutex
	forms []url.Values
	auth  []string
	// refuse makes it answer Stripe's 400 of an unknown price.
	refuse atomic.Bool
}

func newBillingStripe(t *testing.T) *billingStripe {
	f := &billingStripe{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" || r.ParseForm() != nil {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Unrecognized request URL"}}`))
			return
		}
		if f.refuse.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","param":"line_items[0][price]","message":"No such price: 'price_test_team_plan'"}}`))
			return
		}
		f.mu.Lock()
		f.forms = append(f.forms, r.PostForm)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		n := len(f.forms)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("cs_test_%d", n), "object": "checkout.session", "mode": "subscription", "status": "open",
			"url": fmt.Sprintf("https://checkout.stripe.test/c/pay/cs_test_%d", n), "expires_at": time.Now().Add(24 * time.Hour).Unix(),
		})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *billingStripe) sent() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.forms...)
}

func startBillingService(t *testing.T) (*stack, *billingStripe) {
	f := newBillingStripe(t)
	return startService(t, map[string]string{
		"VERIFICATION_STRIPE_SECRET_KEY":     billingStripeKey,
		"VERIFICATION_STRIPE_WEBHOOK_SECRET": billingWebhookSecret,
		"VERIFICATION_STRIPE_PRICE_ID":       billingPriceID,
		"VERIFICATION_STRIPE_API_BASE":       f.URL,
		"VERIFICATION_STRIPE_SUCCESS_URL":    "https://app.example/billing/done",
		"VERIFICATION_STRIPE_CANCEL_URL":     "https://app.example/billing/cancel",
	}), f
}

// billingEvent is a webhook event as Stripe sends it, signed at signedAt with secret.
func billingEvent(t *testing.T, id, typ string, created time.Time, object map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created.Unix(), "type": typ,
		"livemode": false, "pending_webhooks": 1, "data": map[string]any{"object": object},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *stack) deliverBilling(payload []byte, secret string, signedAt time.Time) servicetest.Reply {
	s.t.Helper()
	h := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: signedAt}).Header
	return s.Do("POST", billingWebhookPath, payload, map[string]string{"Stripe-Signature": h})
}

func teamSubscription(id, org, status string, start time.Time) map[string]any {
	return map[string]any{
		"id": id, "object": "subscription", "status": status, "customer": "cus_test_1",
		"metadata": map[string]any{"organization_id": org},
		"items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_test_1", "object": "subscription_item",
			"current_period_start": start.Unix(), "current_period_end": start.AddDate(0, 1, 0).Unix(),
		}}},
	}
}

// seedReliability writes a repository, targets and runs of org straight into the tables (the
// workspace and runs engineers' routes write them in production).
type reliabilitySeed struct {
	s   *stack
	org string
}

func (r reliabilitySeed) exec(sql string, args ...any) {
	r.s.t.Helper()
	if _, err := r.s.Pool.Exec(context.Background(), sql, args...); err != nil {
		r.s.t.Fatalf("%s: %v", sql, err)
	}
}

func (r reliabilitySeed) repository(name string) string {
	id := uuid.NewString()
	r.exec(`INSERT INTO reliability_repositories (id, organization_id, full_name, provider, description, created_at, updated_at)
VALUES ($1, $2, $3, 'manual', $3, now(), now())`, id, r.org, name)
	return id
}

func (r reliabilitySeed) target(repo, name, targetURL string) string {
	id := uuid.NewString()
	r.exec(`INSERT INTO reliability_targets (id, organization_id, repository_id, name, url, evaluators, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, ARRAY['mcp','readiness'], now(), now())`, id, r.org, repo, name, targetURL)
	return id
}

func (r reliabilitySeed) run(repo, target, state, decision string, created time.Time, reasons string) string {
	id := uuid.NewString()
	var dec, rs any
	if decision != "" {
		dec, rs = decision, reasons
	}
	r.exec(`INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, decision, decision_reasons, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, 'ci', $6, $7::jsonb, $8, $8)`, id, r.org, repo, target, state, dec, rs, created)
	return id
}

func (r reliabilitySeed) baseline(target, run, actor string) {
	r.exec(`INSERT INTO reliability_baselines (id, organization_id, target_id, run_id, action, actor, created_at)
VALUES ($1, $2, $3, $4, 'promote', $5, now())`, uuid.NewString(), r.org, target, run, actor)
}

func jsonNumber(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: no object at %s", m, p)
		}
		v = o[p]
	}
	return v
}

// TestReliabilityBillingStatus: a workspace without billing is free, with the free plan's limits,
// and counts its targets and this month's runs (only its own).
func TestReliabilityBillingStatus(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org, key := s.newKey("billing-status")
	other, _ := s.newKey("billing-other")

	if r := s.Do("GET", "/v1/agent-reliability/billing", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("GET /billing without a key: got %d %s, want 401", r.Status, r.Body)
	}
	b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if b["plan"] != "free" || b["status"] != "none" || b["checkout_available"] != false ||
		jsonNumber(t, b, "limits", "targets") != 3.0 || jsonNumber(t, b, "limits", "scans_per_month") != 100.0 ||
		jsonNumber(t, b, "usage", "targets") != 0.0 || jsonNumber(t, b, "usage", "scans") != 0.0 {
		t.Fatalf("a new workspace: got %v, want free, none, limits 3/100, no usage, no checkout (billing not configured)", b)
	}
	month := time.Date(time.Now().UTC().Year(), time.Now().UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	if jsonNumber(t, b, "usage", "period_start") != month.Format(time.RFC3339) ||
		jsonNumber(t, b, "usage", "period_end") != month.AddDate(0, 1, 0).Format(time.RFC3339) {
		t.Errorf("usage period: got %v, want the calendar month from %s", b["usage"], month.Format(time.RFC3339))
	}

	mine := reliabilitySeed{s, org}
	repo := mine.repository("acme/agents")
	t1 := mine.target(repo, "search", "https://mcp.acme.example/search")
	t2 := mine.target(repo, "files", "https://mcp.acme.example/files")
	now := time.Now().UTC()
	mine.run(repo, t1, "succeeded", "allow", now, `[]`)
	mine.run(repo, t2, "succeeded", "allow", now.Add(-time.Minute), `[]`)
	mine.run(repo, t2, "failed", "", now.Add(-2*time.Minute), "")
	mine.run(repo, t1, "succeeded", "allow", month.Add(-time.Hour), `[]`) // last month
	theirs := reliabilitySeed{s, other}
	orepo := theirs.repository("other/agents")
	ot := theirs.target(orepo, "x", "https://mcp.other.example/x")
	theirs.run(orepo, ot, "succeeded", "allow", now, `[]`)

	b = s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if jsonNumber(t, b, "usage", "targets") != 2.0 || jsonNumber(t, b, "usage", "scans") != 3.0 {
		t.Fatalf("usage: got %v, want 2 targets and 3 scans this month", b["usage"])
	}

	// An enterprise workspace has no limits: the members are absent.
	mine.exec(`INSERT INTO reliability_workspaces (organization_id, plan, billing_status, updated_at) VALUES ($1, 'enterprise', 'active', now())`, org)
	b = s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if lim := b["limits"].(map[string]any); b["plan"] != "enterprise" || len(lim) != 0 {
		t.Fatalf("enterprise: got plan %v limits %v, want no limits", b["plan"], lim)
	}
}

// TestReliabilityBillingNotConfigured: without Stripe settings, checkout and the webhook answer 503
// billing_not_configured.
func TestReliabilityBillingNotConfigured(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, key := s.newKey("billing-off")
	r := s.Do("POST", "/v1/agent-reliability/billing/checkout", nil, bearer(key))
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusServiceUnavailable || code != "billing_not_configured" {
		t.Fatalf("checkout without settings: got %d %s, want 503 billing_not_configured", r.Status, r.Body)
	}
	payload := billingEvent(t, "evt_off", "checkout.session.completed", time.Now(), map[string]any{"id": "cs_1", "object": "checkout.session"})
	r = s.deliverBilling(payload, billingWebhookSecret, time.Now())
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusServiceUnavailable || code != "billing_not_configured" {
		t.Fatalf("webhook without settings: got %d %s, want 503 billing_not_configured", r.Status, r.Body)
	}
}

// TestReliabilityBillingUpgrade is the whole path: a checkout through stripe-go to the loopback
// Stripe, the signed checkout.session.completed that upgrades the workspace to team in place, a
// replay that changes nothing, a bad signature refused, and the subscription's updates and deletion.
func TestReliabilityBillingUpgrade(t *testing.T) {
	t.Parallel()
	s, peer := startBillingService(t)
	org, key := s.newKey("billing-upgrade")

	if b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t); b["checkout_available"] != true {
		t.Fatalf("a free workspace with billing configured: got %v, want checkout_available", b)
	}
	if r := s.Do("POST", "/v1/agent-reliability/billing/checkout", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("checkout without a key: got %d, want 401", r.Status)
	}
	co := s.Must("POST", "/v1/agent-reliability/billing/checkout", nil, bearer(key), http.StatusCreated).Object(t)
	if co["id"] != "cs_test_1" || co["url"] != "https://checkout.stripe.test/c/pay/cs_test_1" || co["plan"] != "team" || co["expires_at"] == nil {
		t.Fatalf("checkout: got %v", co)
	}
	forms := peer.sent()
	if len(forms) != 1 {
		t.Fatalf("Stripe got %d checkout sessions, want 1", len(forms))
	}
	for k, want := range map[string]string{
		"mode": "subscription", "client_reference_id": org, "line_items[0][price]": billingPriceID, "line_items[0][quantity]": "1",
		"metadata[organization_id]": org, "subscription_data[metadata][organization_id]": org,
		"success_url": "https://app.example/billing/done", "cancel_url": "https://app.example/billing/cancel",
	} {
		if got := forms[0].Get(k); got != want {
			t.Errorf("checkout form %s = %q, want %q", k, got, want)
		}
	}
	if peer.auth[0] != "Bearer "+billingStripeKey {
		t.Errorf("Stripe call authenticated with %q, want the secret key", peer.auth[0])
	}
	if b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t); b["status"] != "checkout_pending" || b["plan"] != "free" {
		t.Fatalf("after the checkout opened: got %v, want free, checkout_pending", b)
	}

	created := time.Now().Add(-time.Minute)
	completed := billingEvent(t, "evt_completed", "checkout.session.completed", created, map[string]any{
		"id": "cs_test_1", "object": "checkout.session", "mode": "subscription", "status": "complete", "payment_status": "paid",
		"client_reference_id": org, "customer": "cus_test_1", "subscription": "sub_test_1",
	})

	// A delivery whose signature is not the endpoint's, or of another body, is refused and changes nothing.
	for name, r := range map[string]servicetest.Reply{
		"other secret": s.deliverBilling(completed, "whsec_someone_else", time.Now()),
		"no signature": s.Do("POST", billingWebhookPath, completed, nil),
		"stale":        s.deliverBilling(completed, billingWebhookSecret, time.Now().Add(-time.Hour)),
	} {
		code, _ := detailCode(t, r.Body)
		if r.Status != http.StatusBadRequest || (code != "invalid_signature" && code != "stale_webhook") {
			t.Errorf("%s: got %d %s, want 400 invalid_signature or stale_webhook", name, r.Status, r.Body)
		}
	}
	if b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t); b["plan"] != "free" {
		t.Fatalf("after refused deliveries: plan %v, want free", b["plan"])
	}

	r := s.deliverBilling(completed, billingWebhookSecret, time.Now())
	if a := r.Object(t); r.Status != http.StatusOK || a["outcome"] != "upgraded" || a["event_id"] != "evt_completed" || a["received"] != true {
		t.Fatalf("checkout.session.completed: got %d %s, want 200 upgraded", r.Status, r.Body)
	}
	b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if b["plan"] != "team" || b["status"] != "active" || b["checkout_available"] != false ||
		jsonNumber(t, b, "limits", "targets") != 50.0 || jsonNumber(t, b, "limits", "scans_per_month") != 5000.0 {
		t.Fatalf("after the checkout completed: got %v, want team, active, limits 50/5000", b)
	}
	var customer, subscription string
	if err := s.Pool.QueryRow(context.Background(), `SELECT stripe_customer_id, stripe_subscription_id FROM reliability_workspaces WHERE organization_id = $1`, org).
		Scan(&customer, &subscription); err != nil || customer != "cus_test_1" || subscription != "sub_test_1" {
		t.Fatalf("stripe ids: got %q %q %v", customer, subscription, err)
	}

	// The replay of the same event is harmless: 200 duplicate, one event row.
	if a := s.deliverBilling(completed, billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "duplicate" {
		t.Fatalf("replayed event: got %v, want duplicate", a)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_billing_events WHERE event_id = 'evt_completed'`); n != 1 {
		t.Fatalf("event rows: %d, want 1", n)
	}
	// A paid workspace does not open another checkout.
	r = s.Do("POST", "/v1/agent-reliability/billing/checkout", nil, bearer(key))
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusConflict || code != "already_subscribed" {
		t.Fatalf("checkout on team: got %d %s, want 409 already_subscribed", r.Status, r.Body)
	}

	// The subscription's period arrives with its update; past_due keeps the plan.
	start := time.Now().UTC().Truncate(time.Second)
	upd := billingEvent(t, "evt_updated", "customer.subscription.updated", created.Add(time.Second), teamSubscription("sub_test_1", org, "past_due", start))
	if a := s.deliverBilling(upd, billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "recorded" {
		t.Fatalf("past_due: got %v, want recorded", a)
	}
	b = s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if b["plan"] != "team" || b["status"] != "past_due" || b["current_period_start"] != start.Format(time.RFC3339) ||
		b["current_period_end"] != start.AddDate(0, 1, 0).Format(time.RFC3339) {
		t.Fatalf("after past_due: got %v, want team, past_due, the period", b)
	}
	// An older update delivered late is out of order and changes nothing.
	old := billingEvent(t, "evt_old", "customer.subscription.updated", created, teamSubscription("sub_test_1", org, "active", start))
	if a := s.deliverBilling(old, billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "out_of_order" {
		t.Fatalf("older event: got %v, want out_of_order", a)
	}
	// Deletion downgrades the workspace to free in place.
	del := billingEvent(t, "evt_deleted", "customer.subscription.deleted", created.Add(2*time.Second), teamSubscription("sub_test_1", org, "canceled", start))
	if a := s.deliverBilling(del, billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "downgraded" {
		t.Fatalf("deleted: got %v, want downgraded", a)
	}
	b = s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t)
	if b["plan"] != "free" || b["status"] != "canceled" || b["checkout_available"] != true {
		t.Fatalf("after deletion: got %v, want free, canceled, checkout available", b)
	}
	// Types it does not act on are acknowledged; an event naming no workspace is recorded as such.
	if a := s.deliverBilling(billingEvent(t, "evt_charge", "charge.refunded", time.Now(), map[string]any{"id": "ch_1"}), billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "ignored" {
		t.Fatalf("charge.refunded: got %v, want ignored", a)
	}
	strayObject := teamSubscription("sub_nobody", uuid.NewString(), "active", start)
	strayObject["customer"] = "cus_nobody"
	stray := billingEvent(t, "evt_stray", "customer.subscription.updated", time.Now(), strayObject)
	if a := s.deliverBilling(stray, billingWebhookSecret, time.Now()).Object(t); a["outcome"] != "unknown_workspace" {
		t.Fatalf("an unknown workspace: got %v, want unknown_workspace", a)
	}
	// The event trail is append-only.
	if _, err := s.Pool.Exec(context.Background(), `UPDATE reliability_billing_events SET outcome = 'x'`); err == nil {
		t.Fatal("UPDATE of reliability_billing_events succeeded, want refused")
	}
}

// TestReliabilityDashboard: the page shows the workspace's repositories, targets, latest runs with
// their decisions, baselines and held runs, and escapes what users named.
func TestReliabilityDashboard(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org, key := s.newKey("dash <b>org</b>")
	_, otherKey := s.newKey("dash-other")
	seed := reliabilitySeed{s, org}
	repo := seed.repository("<script>alert(1)</script>")
	tg := seed.target(repo, `search"><img src=x onerror=alert(2)>`, "https://mcp.acme.example/search?a=1&b=2")
	now := time.Now().UTC()
	base := seed.run(repo, tg, "succeeded", "allow", now.Add(-time.Hour), `[]`)
	seed.baseline(tg, base, "release-bot")
	held := seed.run(repo, tg, "needs_approval", "needs_approval", now, `[{"action":"needs_approval","message":"tool_added: <delete_all>","rule_index":2}]`)

	if r := s.Do("GET", "/v1/agent-reliability/dashboard", nil, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("dashboard without a key: got %d, want 401", r.Status)
	}
	r := s.Must("GET", "/v1/agent-reliability/dashboard", nil, bearer(key), http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("Content-Type %q, want text/html; charset=utf-8", ct)
	}
	page := string(r.Body)
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", "dash &lt;b&gt;org&lt;/b&gt;", "search&#34;&gt;&lt;img src=x onerror=alert(2)&gt;",
		"https://mcp.acme.example/search?a=1&amp;b=2", held, base, "release-bot", "tool_added: &lt;delete_all&gt;", "needs_approval",
		"Held runs (1)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, never := range []string{"<script>alert(1)", "<img src=x", "<b>org</b>", "<delete_all>"} {
		if strings.Contains(page, never) {
			t.Errorf("the page carries %q unescaped", never)
		}
	}
	// Another workspace sees none of it.
	other := string(s.Must("GET", "/v1/agent-reliability/dashboard", nil, bearer(otherKey), http.StatusOK).Body)
	if strings.Contains(other, "alert(1)") || strings.Contains(other, held) || !strings.Contains(other, "No repositories yet.") {
		t.Fatalf("another workspace's dashboard shows this one's rows")
	}
}

// TestReliabilityBillingConcurrentDeliveries: Stripe may deliver one event twice at once (a retry
// racing a slow first delivery); it is applied exactly once.
func TestReliabilityBillingConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	s, _ := startBillingService(t)
	org, key := s.newKey("billing-race")
	completed := billingEvent(t, "evt_race", "checkout.session.completed", time.Now(), map[string]any{
		"id": "cs_race", "object": "checkout.session", "mode": "subscription", "status": "complete", "payment_status": "paid",
		"client_reference_id": org, "customer": "cus_race", "subscription": "sub_race",
	})
	const n = 6
	outcomes := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.deliverBilling(completed, billingWebhookSecret, time.Now())
			var a map[string]any
			_ = json.Unmarshal(r.Body, &a)
			outcomes <- fmt.Sprintf("%d %v", r.Status, a["outcome"])
		}()
	}
	wg.Wait()
	close(outcomes)
	got := map[string]int{}
	for o := range outcomes {
		got[o]++
	}
	if got["200 upgraded"] != 1 || got["200 duplicate"] != n-1 {
		t.Fatalf("outcomes of %d concurrent deliveries: %v, want one upgraded and the rest duplicate", n, got)
	}
	if b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t); b["plan"] != "team" {
		t.Fatalf("plan %v, want team", b["plan"])
	}
}

// TestReliabilityBillingRefusals: Stripe refusing the checkout is 503 payment_processor_unavailable
// (its message is not passed on), and a webhook body over 256 KiB is 413.
func TestReliabilityBillingRefusals(t *testing.T) {
	t.Parallel()
	s, peer := startBillingService(t)
	_, key := s.newKey("billing-refusals")
	peer.refuse.Store(true)
	r := s.Do("POST", "/v1/agent-reliability/billing/checkout", nil, bearer(key))
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusServiceUnavailable || code != "payment_processor_unavailable" || strings.Contains(string(r.Body), "price_test") {
		t.Fatalf("a refused checkout: got %d %s, want 503 payment_processor_unavailable without Stripe's message", r.Status, r.Body)
	}
	if b := s.Must("GET", "/v1/agent-reliability/billing", nil, bearer(key), http.StatusOK).Object(t); b["status"] != "none" {
		t.Fatalf("after a refused checkout: status %v, want none", b["status"])
	}
	big := billingEvent(t, "evt_big", "checkout.session.completed", time.Now(), map[string]any{
		"id": "cs_big", "object": "checkout.session", "metadata": map[string]any{"pad": strings.Repeat("x", 300<<10)},
	})
	r = s.deliverBilling(big, billingWebhookSecret, time.Now())
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusRequestEntityTooLarge || code != "payload_too_large" {
		t.Fatalf("a 300 KiB delivery: got %d %.200s, want 413 payload_too_large", r.Status, r.Body)
	}
	r = s.deliverBilling([]byte(`{"id":"evt_x","object":"event","api_version":"1999-01-01","type":"checkout.session.completed"}`), billingWebhookSecret, time.Now())
	if code, _ := detailCode(t, r.Body); r.Status != http.StatusBadRequest || code != "invalid_event" {
		t.Fatalf("an event of another API version: got %d %s, want 400 invalid_event", r.Status, r.Body)
	}
}
