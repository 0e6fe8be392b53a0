package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

const (
	stripeSecretKey     = "sk_test_billing_helper_key"
	stripeWebhookSecret = "whsec_test_billing_helper_secret"
	stripePriceID       = "price_test_paid_plan"
)

// fakeStripe is a loopback peer for the one Stripe endpoint the service calls, POST
// /v1/checkout/sessions: stripe-go talks to it over HTTP exactly as to api.stripe.com, and the test
// reads back the form stripe-go sent.
type fakeStripe struct {
	*httptest.Server
	mu       sync.Mutex
	sessions []url.Values
	auth     []string
}

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Unrecognized request URL"}}`))
			return
		}
		if err := r.ParseForm(); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.sessions = append(f.sessions, r.PostForm)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		n := len(f.sessions)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("cs_test_%d", n), "object": "checkout.session", "mode": r.PostForm.Get("mode"),
			"status": "open", "url": fmt.Sprintf("https://checkout.stripe.test/c/pay/cs_test_%d", n),
			"expires_at": time.Now().Add(24 * time.Hour).Unix(), "client_reference_id": r.PostForm.Get("client_reference_id"),
		})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeStripe) last(t *testing.T) (url.Values, string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sessions) == 0 {
		t.Fatal("no checkout session reached the Stripe peer")
	}
	return f.sessions[len(f.sessions)-1], f.auth[len(f.auth)-1]
}

func startBilling(t *testing.T) (*stack, *fakeStripe) {
	f := newFakeStripe(t)
	return startService(t, map[string]string{
		"SCORING_STRIPE_SECRET_KEY":     stripeSecretKey,
		"SCORING_STRIPE_WEBHOOK_SECRET": stripeWebhookSecret,
		"SCORING_STRIPE_PRICE_ID":       stripePriceID,
		"SCORING_STRIPE_API_BASE":       f.URL,
	}), f
}

// stripeEvent is a webhook event as Stripe sends it (object "event", the SDK's API version).
func stripeEvent(id, typ string, created time.Time, object map[string]any) []byte {
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created.Unix(), "type": typ,
		"livemode": false, "pending_webhooks": 1, "data": map[string]any{"object": object},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// deliver posts a webhook the way Stripe does: the raw JSON body and a Stripe-Signature header over
// "timestamp.body" with the endpoint's secret, signed at signedAt.
func (s *stack) deliver(payload []byte, secret string, signedAt time.Time) servicetest.Reply {
	s.t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: signedAt})
	return s.Do("POST", "/v1/billing/webhook", payload, map[string]string{"Stripe-Signature": signed.Header})
}

func checkoutCompleted(accountID, subscriptionID, email string) map[string]any {
	return map[string]any{
		"id": "cs_test_1", "object": "checkout.session", "mode": "subscription", "status": "complete",
		"payment_status": "paid", "client_reference_id": accountID, "metadata": map[string]any{"account_id": accountID},
		"customer": "cus_test_1", "subscription": subscriptionID, "customer_details": map[string]any{"email": email},
	}
}

func subscription(id, accountID, status string, periodEnd time.Time) map[string]any {
	return map[string]any{
		"id": id, "object": "subscription", "status": status, "customer": "cus_test_1", "cancel_at_period_end": false,
		"metadata": map[string]any{"account_id": accountID},
		"items": map[string]any{"object": "list", "data": []any{map[string]any{
			"id": "si_test_1", "object": "subscription_item", "current_period_end": periodEnd.Unix(),
			"current_period_start": periodEnd.AddDate(0, -1, 0).Unix(),
		}}},
	}
}

func invoice(id, subscriptionID, accountID string) map[string]any {
	return map[string]any{
		"id": id, "object": "invoice", "customer": "cus_test_1",
		"parent": map[string]any{"type": "subscription_details", "subscription_details": map[string]any{
			"subscription": subscriptionID, "metadata": map[string]any{"account_id": accountID},
		}},
	}
}

// TestUpgradeURLOpensInABrowser: the upgrade_url of a 402 is a link. Opened without a key (a
// browser) it is a page that asks for the key; with the trial key as bearer it is a 303 to the
// hosted checkout.
func TestUpgradeURLOpensInABrowser(t *testing.T) {
	t.Parallel()
	s, _ := startBilling(t)
	trial := s.Do("POST", "/v1/keys/trial", nil, nil).Object(t)
	key, keyID := trial["api_key"].(string), trial["key_id"].(string)
	month := time.Now().UTC().Format("2006-01")
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO usage_counters (key_id, period, calls) VALUES ($1, $2, 1000)`, keyID, month); err != nil {
		t.Fatal(err)
	}
	r := s.scoreDenial(key)
	if r.Status != 402 {
		t.Fatalf("trial key past its quota: %d %s, want 402", r.Status, r.Body)
	}
	upgrade, err := url.Parse(r.Object(t)["upgrade_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(header map[string]string) (*http.Response, string) {
		req, err := http.NewRequest("GET", s.URL+upgrade.Path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get(nil); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, "<form") || !strings.Contains(body, `fetch("/v1/billing/checkout-session", {method: "POST"`) {
		t.Fatalf("GET %s in a browser: got %d %q %.300s, want 200 with a page that opens the checkout", upgrade.Path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := get(bearer(key)); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "https://checkout.stripe.test/c/pay/cs_test_1" {
		t.Fatalf("GET %s with the trial key: got %d Location %q %s, want 303 to the checkout", upgrade.Path, resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if resp, body := get(bearer("trial_" + strings.Repeat("a", 43))); resp.StatusCode != 401 || !strings.Contains(body, "Invalid or revoked API key") {
		t.Fatalf("GET %s with an unknown key: got %d %s, want the 401 of POST", upgrade.Path, resp.StatusCode, body)
	}
}

// TestBillingUpgradesTrialKeyInPlace is README "Billing"'s transition: a trial key that used its quota gets
// 402, opens a checkout, the processor's signed webhook upgrades the same key and account, and the
// key scores again at once with the paid plan's limits while its month's usage keeps counting.
func TestBillingUpgradesTrialKeyInPlace(t *testing.T) {
	t.Parallel()
	s, peer := startBilling(t)
	trial := s.Do("POST", "/v1/keys/trial", nil, nil).Object(t)
	key, keyID, accountID := trial["api_key"].(string), trial["key_id"].(string), trial["account_id"].(string)

	month := time.Now().UTC().Format("2006-01")
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO usage_counters (key_id, period, calls) VALUES ($1, $2, 1000)`, keyID, month); err != nil {
		t.Fatal(err)
	}
	r := s.scoreDenial(key)
	if r.Status != 402 {
		t.Fatalf("trial key past its quota: %d %s, want 402", r.Status, r.Body)
	}
	upgradeURL := r.Object(t)["upgrade_url"].(string)
	if !strings.HasSuffix(upgradeURL, "/v1/billing/checkout-session") {
		t.Fatalf("upgrade_url %q", upgradeURL)
	}

	// Checkout: the trial key as bearer, no body.
	if r := s.Do("POST", "/v1/billing/checkout-session", nil, nil); r.Status != 401 {
		t.Fatalf("checkout without bearer: %d %s, want 401", r.Status, r.Body)
	}
	r = s.Do("POST", "/v1/billing/checkout-session", nil, bearer(key))
	co := r.Object(t)
	if r.Status != 201 || co["checkout_session_id"] != "cs_test_1" || co["url"] != "https://checkout.stripe.test/c/pay/cs_test_1" ||
		co["account_id"] != accountID || co["key_id"] != keyID || co["plan"] != "trial" || co["target_plan"] != "paid" || co["expires_at"] == nil {
		t.Fatalf("checkout session: %d %s", r.Status, r.Body)
	}
	form, auth := peer.last(t)
	if auth != "Bearer "+stripeSecretKey {
		t.Errorf("stripe-go sent Authorization %q, want the secret key as bearer", auth)
	}
	for field, want := range map[string]string{
		"mode": "subscription", "client_reference_id": accountID, "metadata[account_id]": accountID, "metadata[key_id]": keyID,
		"subscription_data[metadata][account_id]": accountID, "line_items[0][price]": stripePriceID,
	} {
		if got := form.Get(field); got != want {
			t.Errorf("checkout form %s: got %q, want %q", field, got, want)
		}
	}
	if !strings.Contains(form.Get("success_url"), "/v1/billing/checkout/return?result=success") {
		t.Errorf("success_url %q", form.Get("success_url"))
	}

	// The processor confirms: the same key moves to paid.
	completed := stripeEvent("evt_checkout_1", "checkout.session.completed", time.Now(), checkoutCompleted(accountID, "sub_test_1", "Buyer@Example.com"))
	r = s.deliver(completed, stripeWebhookSecret, time.Now())
	if r.Status != 200 || r.Object(t)["outcome"] != "upgraded" || r.Object(t)["event_id"] != "evt_checkout_1" {
		t.Fatalf("checkout.session.completed: %d %s, want 200 upgraded", r.Status, r.Body)
	}
	// No wait: this replica forgot the key's cached plan.
	if r := s.scoreDenial(key); r.Status != 200 {
		t.Fatalf("the same key after the upgrade: %d %s, want 200", r.Status, r.Body)
	}
	lim := s.Do("GET", "/v1/limits", nil, bearer(key)).Object(t)
	if lim["plan"] != "paid" || lim["hard_quota"] != false || lim["requests_per_second"] != 50.0 || lim["max_in_flight"] != 16.0 {
		t.Fatalf("limits after the upgrade: %v", lim)
	}
	// Paid rate: more than the trial's burst of 5 in a row.
	for i := range 8 {
		if r := s.scoreDenial(key); r.Status != 200 {
			t.Fatalf("paid call %d: %d %s", i, r.Status, r.Body)
		}
	}
	use := s.Do("GET", "/v1/usage", nil, bearer(key)).Object(t)
	if use["billable_calls"] != 1009.0 || use["overage_calls"] != 9.0 || use["plan"] != "paid" {
		t.Fatalf("usage after the upgrade: %v, want the trial's 1,000 calls plus 9 (overage 9)", use)
	}

	// A redelivery of the same event changes nothing.
	r = s.deliver(completed, stripeWebhookSecret, time.Now())
	if r.Status != 200 || r.Object(t)["outcome"] != "duplicate" {
		t.Fatalf("replayed event: %d %s, want 200 duplicate", r.Status, r.Body)
	}
	if n := s.Count(`SELECT count(*) FROM billing_events WHERE event_id = 'evt_checkout_1'`); n != 1 {
		t.Fatalf("evt_checkout_1 stored %d times", n)
	}

	// The paid key may not open another checkout for itself.
	if r := s.Do("POST", "/v1/billing/checkout-session", nil, bearer(key)); r.Status != 403 {
		t.Fatalf("checkout with a paid key: %d %s, want 403", r.Status, r.Body)
	} else if d, _ := r.Object(t)["detail"].(string); !strings.Contains(d, "paid plan") {
		t.Fatalf("403 detail %q", d)
	}

	// Subscription and invoices: renewal date and payment results.
	periodEnd := time.Now().AddDate(0, 1, 0).UTC().Truncate(time.Second)
	t0 := time.Now().Add(-time.Minute)
	for _, ev := range []struct {
		id, typ string
		at      time.Time
		object  map[string]any
		outcome string
	}{
		{"evt_sub_1", "customer.subscription.updated", t0, subscription("sub_test_1", accountID, "active", periodEnd), "recorded"},
		{"evt_inv_1", "invoice.payment_failed", t0.Add(time.Second), invoice("in_test_1", "sub_test_1", accountID), "recorded"},
		{"evt_inv_2", "invoice.paid", t0.Add(2 * time.Second), invoice("in_test_2", "sub_test_1", accountID), "recorded"},
		// Delivered late: older than the invoice.paid already applied.
		{"evt_inv_0", "invoice.payment_failed", t0.Add(-time.Second), invoice("in_test_0", "sub_test_1", accountID), "out_of_order"},
		{"evt_sub_0", "customer.subscription.updated", t0.Add(-time.Second), subscription("sub_test_1", accountID, "past_due", periodEnd), "out_of_order"},
	} {
		r := s.deliver(stripeEvent(ev.id, ev.typ, ev.at, ev.object), stripeWebhookSecret, time.Now())
		if r.Status != 200 || r.Object(t)["outcome"] != ev.outcome {
			t.Fatalf("%s %s: %d %s, want 200 %s", ev.id, ev.typ, r.Status, r.Body, ev.outcome)
		}
	}

	// Support's view, by the checkout's e-mail (lower-cased), which the anonymous account took.
	if r := s.Do("GET", "/v1/billing/accounts/buyer@example.com/status", nil, nil); r.Status != 401 {
		t.Fatalf("status without admin token: %d %s, want 401", r.Status, r.Body)
	}
	r = s.Do("GET", "/v1/billing/accounts/buyer@example.com/status", nil, admin)
	st := r.Object(t)
	if r.Status != 200 || st["plan"] != "paid" || st["subscription_state"] != "active" || st["last_payment_result"] != "succeeded" ||
		st["renewal_date"] != periodEnd.Format(time.RFC3339) || st["api_key_status"] != "active" || st["account_id"] != accountID ||
		st["email"] != "buyer@example.com" || st["customer_id"] != "cus_test_1" || st["subscription_id"] != "sub_test_1" {
		t.Fatalf("status: %d %s", r.Status, r.Body)
	}
	if ks := st["api_keys"].([]any); len(ks) != 1 || ks[0].(map[string]any)["key_id"] != keyID || ks[0].(map[string]any)["status"] != "active" {
		t.Fatalf("status api_keys: %v", st["api_keys"])
	}

	// Cancellation returns the account to trial limits; this month's 1,009 calls are past the quota.
	r = s.deliver(stripeEvent("evt_sub_2", "customer.subscription.deleted", time.Now(), subscription("sub_test_1", accountID, "canceled", periodEnd)), stripeWebhookSecret, time.Now())
	if r.Status != 200 || r.Object(t)["outcome"] != "downgraded" {
		t.Fatalf("customer.subscription.deleted: %d %s, want 200 downgraded", r.Status, r.Body)
	}
	if r := s.scoreDenial(key); r.Status != 402 {
		t.Fatalf("after cancellation: %d %s, want 402", r.Status, r.Body)
	}
	st = s.Do("GET", "/v1/billing/accounts/buyer@example.com/status", nil, admin).Object(t)
	if st["plan"] != "trial" || st["subscription_state"] != "canceled" {
		t.Fatalf("status after cancellation: %v", st)
	}
	// A late update of the canceled subscription does not revive the plan.
	r = s.deliver(stripeEvent("evt_sub_3", "customer.subscription.updated", time.Now().Add(time.Second), subscription("sub_test_1", accountID, "active", periodEnd)), stripeWebhookSecret, time.Now())
	if r.Status != 200 || r.Object(t)["outcome"] != "out_of_order" {
		t.Fatalf("update after deletion: %d %s, want 200 out_of_order", r.Status, r.Body)
	}
}

func TestBillingWebhookRefusesWhatItCannotTrust(t *testing.T) {
	t.Parallel()
	s, _ := startBilling(t)
	trial := s.Do("POST", "/v1/keys/trial", nil, nil).Object(t)
	accountID := trial["account_id"].(string)
	completed := stripeEvent("evt_w_1", "checkout.session.completed", time.Now(), checkoutCompleted(accountID, "sub_w_1", "w@example.com"))

	cases := []struct {
		name   string
		send   func() servicetest.Reply
		status int
		detail string
	}{
		{"no signature", func() servicetest.Reply { return s.Do("POST", "/v1/billing/webhook", completed, nil) }, 400, "Invalid webhook signature"},
		{"another secret", func() servicetest.Reply { return s.deliver(completed, "whsec_someone_else", time.Now()) }, 400, "Invalid webhook signature"},
		{"body changed after signing", func() servicetest.Reply {
			signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: completed, Secret: stripeWebhookSecret})
			tampered := []byte(strings.Replace(string(completed), `"paid"`, `"unpaid"`, 1))
			return s.Do("POST", "/v1/billing/webhook", tampered, map[string]string{"Stripe-Signature": signed.Header})
		}, 400, "Invalid webhook signature"},
		{"stale timestamp", func() servicetest.Reply {
			return s.deliver(completed, stripeWebhookSecret, time.Now().Add(-10*time.Minute))
		}, 400, "tolerance"},
		{"not an event", func() servicetest.Reply {
			return s.deliver([]byte(`{"object":"charge"}`), stripeWebhookSecret, time.Now())
		}, 400, "Unreadable webhook event"},
		{"another API version", func() servicetest.Reply {
			var m map[string]any
			_ = json.Unmarshal(completed, &m)
			m["api_version"] = "2020-08-27"
			b, _ := json.Marshal(m)
			return s.deliver(b, stripeWebhookSecret, time.Now())
		}, 400, stripe.APIVersion},
	}
	for _, c := range cases {
		r := c.send()
		if r.Status != c.status || !strings.Contains(r.Object(t)["detail"].(string), c.detail) {
			t.Errorf("%s: %d %s, want %d with a detail naming %q", c.name, r.Status, r.Body, c.status, c.detail)
		}
	}
	if n := s.Count(`SELECT count(*) FROM billing_events`); n != 0 {
		t.Fatalf("refused deliveries stored %d events", n)
	}
	if n := s.Count(`SELECT count(*) FROM accounts WHERE id = $1 AND plan = 'trial'`, accountID); n != 1 {
		t.Fatal("a refused delivery changed the plan")
	}

	// Event types the service does not act on are acknowledged and not stored.
	r := s.deliver(stripeEvent("evt_w_2", "charge.refunded", time.Now(), map[string]any{"id": "ch_1", "object": "charge"}), stripeWebhookSecret, time.Now())
	if r.Status != 200 || r.Object(t)["outcome"] != "ignored" {
		t.Fatalf("unknown event type: %d %s, want 200 ignored", r.Status, r.Body)
	}
	// An event about no account of ours is recorded once and changes nothing.
	stranger := stripeEvent("evt_w_3", "checkout.session.completed", time.Now(), map[string]any{
		"id": "cs_x", "object": "checkout.session", "status": "complete", "payment_status": "paid", "customer": "cus_unknown",
	})
	for _, want := range []string{"unknown_account", "duplicate"} {
		if r := s.deliver(stranger, stripeWebhookSecret, time.Now()); r.Status != 200 || r.Object(t)["outcome"] != want {
			t.Fatalf("event of an unknown account: %d %s, want 200 %s", r.Status, r.Body, want)
		}
	}
	// An asynchronous payment completes the checkout unpaid: no upgrade until invoice.paid.
	unpaid := checkoutCompleted(accountID, "sub_w_1", "w@example.com")
	unpaid["payment_status"] = "unpaid"
	if r := s.deliver(stripeEvent("evt_w_4", "checkout.session.completed", time.Now(), unpaid), stripeWebhookSecret, time.Now()); r.Object(t)["outcome"] != "recorded" {
		t.Fatalf("unpaid checkout: %d %s, want recorded", r.Status, r.Body)
	}
	if r := s.deliver(stripeEvent("evt_w_5", "invoice.paid", time.Now(), invoice("in_w_1", "sub_w_1", accountID)), stripeWebhookSecret, time.Now()); r.Object(t)["outcome"] != "upgraded" {
		t.Fatalf("invoice.paid after an unpaid checkout: %d %s, want upgraded", r.Status, r.Body)
	}
}

// TestBillingConcurrentDeliveriesApplyOnce sends one event eight times at once, as a retrying
// processor and a slow first delivery can: exactly one applies.
func TestBillingConcurrentDeliveriesApplyOnce(t *testing.T) {
	t.Parallel()
	s, _ := startBilling(t)
	accountID := s.Do("POST", "/v1/keys/trial", nil, nil).Object(t)["account_id"].(string)
	ev := stripeEvent("evt_c_1", "checkout.session.completed", time.Now(), checkoutCompleted(accountID, "sub_c_1", "c@example.com"))
	outcomes := make([]string, 8)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev, Secret: stripeWebhookSecret})
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/billing/webhook", strings.NewReader(string(ev)))
			req.Header.Set("Stripe-Signature", signed.Header)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				outcomes[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			outcomes[i] = fmt.Sprintf("%d %v", resp.StatusCode, body["outcome"])
		}()
	}
	wg.Wait()
	upgraded, duplicate := 0, 0
	for _, o := range outcomes {
		switch o {
		case "200 upgraded":
			upgraded++
		case "200 duplicate":
			duplicate++
		}
	}
	if upgraded != 1 || duplicate != len(outcomes)-1 {
		t.Fatalf("8 concurrent deliveries: %v, want one upgraded and 7 duplicates", outcomes)
	}
}

func TestBillingAdminCheckoutAndStatus(t *testing.T) {
	t.Parallel()
	s, peer := startBilling(t)
	issued := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "trial", "email": "Clinic@Example.com"}, admin).Object(t)
	paid := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "paid", "email": "paid@example.com"}, admin).Object(t)
	trialKeyID := s.Do("POST", "/v1/keys/trial", nil, nil).Object(t)["key_id"].(string)

	const path = "/v1/billing/checkout/session"
	if r := s.Do("POST", path, map[string]any{"email": "clinic@example.com"}, bearer(issued["api_key"].(string))); r.Status != 401 {
		t.Fatalf("admin checkout with a bearer key: %d %s, want 401", r.Status, r.Body)
	}
	r := s.Do("POST", path, map[string]any{"email": "clinic@example.com"}, admin)
	co := r.Object(t)
	if r.Status != 201 || co["account_id"] != issued["account_id"] || co["email"] != "clinic@example.com" || co["url"] == "" {
		t.Fatalf("admin checkout by e-mail: %d %s", r.Status, r.Body)
	}
	if form, _ := peer.last(t); form.Get("customer_email") != "clinic@example.com" || form.Get("client_reference_id") != issued["account_id"] {
		t.Fatalf("checkout form by e-mail: %v", form)
	}
	r = s.Do("POST", path, map[string]any{"key_id": trialKeyID}, admin)
	if r.Status != 201 || r.Object(t)["key_id"] != trialKeyID {
		t.Fatalf("admin checkout by key id: %d %s", r.Status, r.Body)
	}

	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"both", map[string]any{"email": "clinic@example.com", "key_id": trialKeyID}, 422},
		{"neither", map[string]any{}, 422},
		{"not an e-mail", map[string]any{"email": "clinic"}, 422},
		{"not a key id", map[string]any{"key_id": "trial_abc"}, 422},
		{"unknown e-mail", map[string]any{"email": "nobody@example.com"}, 404},
		{"unknown key", map[string]any{"key_id": "0190f1c2-0000-7000-8000-000000000000"}, 404},
		{"paid account", map[string]any{"email": "paid@example.com"}, 409},
	} {
		r := s.Do("POST", path, c.body, admin)
		if d, ok := r.Object(t)["detail"].(string); r.Status != c.status || !ok || d == "" {
			t.Errorf("%s: %d %s, want %d with a string detail", c.name, r.Status, r.Body, c.status)
		}
	}

	// Status before any payment.
	r = s.Do("GET", "/v1/billing/accounts/clinic@example.com/status", nil, admin)
	st := r.Object(t)
	if r.Status != 200 || st["plan"] != "trial" || st["subscription_state"] != "none" || st["last_payment_result"] != "none" ||
		st["api_key_status"] != "active" || st["renewal_date"] != nil {
		t.Fatalf("status before payment: %d %s", r.Status, r.Body)
	}
	st = s.Do("GET", "/v1/billing/accounts/paid%40example.com/status", nil, admin).Object(t)
	if st["plan"] != "paid" || st["account_id"] != paid["account_id"] {
		t.Fatalf("status of the paid account: %v", st)
	}
	if r := s.Do("GET", "/v1/billing/accounts/nobody@example.com/status", nil, admin); r.Status != 404 {
		t.Fatalf("status of an unknown e-mail: %d %s, want 404", r.Status, r.Body)
	}
}

func TestBillingNotConfigured(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.trialKey()
	r := s.Do("POST", "/v1/billing/checkout-session", nil, bearer(key))
	if d, _ := r.Object(t)["detail"].(string); r.Status != 503 || !strings.Contains(d, "not configured") {
		t.Fatalf("checkout without Stripe settings: %d %s, want 503", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/billing/checkout/session", map[string]any{"email": "a@example.com"}, admin); r.Status != 503 {
		t.Fatalf("admin checkout without Stripe settings: %d %s, want 503", r.Status, r.Body)
	}
	if r := s.deliver([]byte(`{}`), stripeWebhookSecret, time.Now()); r.Status != 503 {
		t.Fatalf("webhook without Stripe settings: %d %s, want 503", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/billing/checkout/return?result=success", nil, nil); r.Status != 200 || r.Object(t)["status"] != "complete" {
		t.Fatalf("checkout return page: %d %s", r.Status, r.Body)
	}
}
