package billing_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/pkg/stripebilling"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

func TestApply(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	free := billing.Workspace{Plan: billing.PlanFree, Status: billing.StatusNone}
	team := billing.Workspace{Plan: billing.PlanTeam, Status: billing.StatusActive, SubscriptionID: "sub_1", SubscriptionEventAt: at(time.Minute)}
	canceled := billing.Workspace{Plan: billing.PlanFree, Status: billing.StatusCanceled, SubscriptionID: "sub_1", SubscriptionEventAt: at(time.Minute)}
	enterprise := billing.Workspace{Plan: billing.PlanEnterprise, Status: billing.StatusNone}
	sub := func(typ, id, status string, created time.Duration) billing.Event {
		return billing.Event{ID: "evt", Type: typ, SubscriptionID: id, SubscriptionStatus: status, Created: t0.Add(created)}
	}
	for _, tc := range []struct {
		name       string
		w          billing.Workspace
		e          billing.Event
		want       billing.Outcome
		plan, stat string
	}{
		{"paid checkout upgrades", free, billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_1", Settled: true}, billing.OutcomeUpgraded, "team", "active"},
		{"unpaid checkout waits", free, billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_1"}, billing.OutcomeRecorded, "free", "checkout_pending"},
		{"enterprise keeps its plan", enterprise, billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_1", Settled: true}, billing.OutcomeRecorded, "enterprise", "active"},
		{"active subscription upgrades", free, sub(billing.EventSubscriptionCreated, "sub_1", "active", 0), billing.OutcomeUpgraded, "team", "active"},
		{"trialing is team", free, sub(billing.EventSubscriptionUpdated, "sub_1", "trialing", 0), billing.OutcomeUpgraded, "team", "active"},
		{"past_due keeps team", team, sub(billing.EventSubscriptionUpdated, "sub_1", "past_due", 2*time.Minute), billing.OutcomeRecorded, "team", "past_due"},
		{"unpaid downgrades", team, sub(billing.EventSubscriptionUpdated, "sub_1", "unpaid", 2*time.Minute), billing.OutcomeDowngraded, "free", "canceled"},
		{"deleted downgrades", team, sub(billing.EventSubscriptionDeleted, "sub_1", "active", 2*time.Minute), billing.OutcomeDowngraded, "free", "canceled"},
		{"incomplete waits", free, sub(billing.EventSubscriptionCreated, "sub_1", "incomplete", 0), billing.OutcomeRecorded, "free", "checkout_pending"},
		{"older event is out of order", team, sub(billing.EventSubscriptionUpdated, "sub_1", "canceled", 0), billing.OutcomeOutOfOrder, "team", "active"},
		{"canceled is final", canceled, sub(billing.EventSubscriptionUpdated, "sub_1", "active", 2*time.Minute), billing.OutcomeOutOfOrder, "free", "canceled"},
		{"another subscription while one runs", team, sub(billing.EventSubscriptionDeleted, "sub_2", "canceled", 2*time.Minute), billing.OutcomeOtherSubscription, "team", "active"},
		{"a new subscription after a cancellation", canceled, sub(billing.EventSubscriptionCreated, "sub_2", "active", 2*time.Minute), billing.OutcomeUpgraded, "team", "active"},
		{"enterprise subscription change", enterprise, sub(billing.EventSubscriptionDeleted, "sub_1", "canceled", 0), billing.OutcomeRecorded, "enterprise", "canceled"},
		{"other types", free, billing.Event{Type: "invoice.paid"}, billing.OutcomeIgnored, "free", "none"},
	} {
		w := tc.w
		if got := billing.Apply(&w, tc.e); got != tc.want || w.Plan != tc.plan || w.Status != tc.stat {
			t.Errorf("%s: got %s, plan %s, status %s; want %s, %s, %s", tc.name, got, w.Plan, w.Status, tc.want, tc.plan, tc.stat)
		}
	}
}

func TestMonth(t *testing.T) {
	t.Parallel()
	from, to := reliability.Month(time.Date(2026, 12, 31, 23, 59, 0, 0, time.FixedZone("x", -5*3600)))
	if from != time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) || to != time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC) {
		t.Fatalf("got %s..%s, want January 2027 UTC", from, to)
	}
}

const fuzzSecret = "whsec_fuzz"

// FuzzParseEvent feeds webhook bodies and signature headers, which anyone can send, to the Stripe
// processor: it never panics, answers only its documented errors, and accepts only signed events.
func FuzzParseEvent(f *testing.F) {
	for _, obj := range []struct {
		typ    string
		object map[string]any
	}{
		{billing.EventCheckoutCompleted, map[string]any{"id": "cs_1", "object": "checkout.session", "client_reference_id": "org", "status": "complete", "payment_status": "paid"}},
		{billing.EventSubscriptionDeleted, map[string]any{"id": "sub_1", "object": "subscription", "status": "canceled", "metadata": map[string]any{"organization_id": "org"}}},
		{billing.EventSubscriptionUpdated, map[string]any{"object": "subscription"}},
	} {
		b, _ := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "api_version": stripe.APIVersion,
			"created": time.Now().Unix(), "type": obj.typ, "data": map[string]any{"object": obj.object}})
		f.Add(b, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: fuzzSecret}).Header)
	}
	f.Add([]byte(`{}`), "t=1,v1=00")
	p := billing.NewStripe(stripebilling.New(stripebilling.Config{SecretKey: "sk_test_x", WebhookSecret: fuzzSecret, PriceID: "price_x"}))
	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		e, err := p.ParseEvent(payload, header)
		if err != nil {
			if !errors.Is(err, billing.ErrSignature) && !errors.Is(err, billing.ErrStale) && !errors.Is(err, billing.ErrInvalidEvent) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if e.ID == "" || (billing.Handled(e.Type) && e.Type != billing.EventCheckoutCompleted && e.SubscriptionID == "") {
			t.Fatalf("accepted an incomplete event %+v", e)
		}
	})
}
