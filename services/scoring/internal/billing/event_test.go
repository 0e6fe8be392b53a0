package billing_test

import (
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
)

func TestApply(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	renew := at(30 * 24 * time.Hour)
	live := billing.Billing{SubscriptionID: "sub_1", SubscriptionStatus: "active", SubscriptionEventAt: at(0)}
	canceled := billing.Billing{SubscriptionID: "sub_1", SubscriptionStatus: "canceled", SubscriptionEventAt: at(0)}

	cases := []struct {
		name     string
		plan     string
		billing  billing.Billing
		event    billing.Event
		want     billing.Outcome
		wantPlan string
		check    func(t *testing.T, a billing.Account)
	}{
		{"paid checkout upgrades a trial", "trial", billing.Billing{},
			billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_1", PaymentSettled: true, CustomerID: "cus_1", CustomerEmail: "a@b.c"},
			billing.OutcomeUpgraded, "paid", func(t *testing.T, a billing.Account) {
				if a.SubscriptionID != "sub_1" || a.SubscriptionStatus != "active" || a.CustomerID != "cus_1" || a.Email != "a@b.c" {
					t.Errorf("billing %+v", a)
				}
			}},
		{"unpaid checkout records and waits", "trial", billing.Billing{},
			billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_1"},
			billing.OutcomeRecorded, "trial", func(t *testing.T, a billing.Account) {
				if a.SubscriptionStatus != "incomplete" {
					t.Errorf("status %q, want incomplete", a.SubscriptionStatus)
				}
			}},
		{"checkout leaves a commit account alone", "commit", billing.Billing{},
			billing.Event{Type: billing.EventCheckoutCompleted, PaymentSettled: true}, billing.OutcomeRecorded, "commit", nil},
		{"active subscription records the renewal date", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "active", Created: t0.Add(time.Minute), CurrentPeriodEnd: renew, CancelAtPeriodEnd: true},
			billing.OutcomeRecorded, "paid", func(t *testing.T, a billing.Account) {
				if a.CurrentPeriodEnd == nil || !a.CurrentPeriodEnd.Equal(*renew) || !a.CancelAtPeriodEnd || !a.SubscriptionEventAt.Equal(t0.Add(time.Minute)) {
					t.Errorf("billing %+v", a.Billing)
				}
			}},
		{"subscription created before the checkout event upgrades", "trial", billing.Billing{},
			billing.Event{Type: billing.EventSubscriptionCreated, SubscriptionID: "sub_1", SubscriptionStatus: "active", Created: t0},
			billing.OutcomeUpgraded, "paid", nil},
		{"trialing is paid", "trial", billing.Billing{},
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "trialing", Created: t0},
			billing.OutcomeUpgraded, "paid", nil},
		{"past_due keeps paid while the processor retries", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "past_due", Created: t0.Add(time.Minute)},
			billing.OutcomeRecorded, "paid", nil},
		{"unpaid returns to trial", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "unpaid", Created: t0.Add(time.Minute)},
			billing.OutcomeDowngraded, "trial", nil},
		{"paused returns to trial", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "paused", Created: t0.Add(time.Minute)},
			billing.OutcomeDowngraded, "trial", nil},
		{"deleted returns to trial", "paid", live,
			billing.Event{Type: billing.EventSubscriptionDeleted, SubscriptionID: "sub_1", SubscriptionStatus: "active", Created: t0.Add(time.Minute)},
			billing.OutcomeDowngraded, "trial", func(t *testing.T, a billing.Account) {
				if a.SubscriptionStatus != "canceled" {
					t.Errorf("status %q, want canceled", a.SubscriptionStatus)
				}
			}},
		{"deleted leaves an internal account alone", "internal", live,
			billing.Event{Type: billing.EventSubscriptionDeleted, SubscriptionID: "sub_1", Created: t0.Add(time.Minute)},
			billing.OutcomeRecorded, "internal", nil},
		{"an older subscription event is ignored", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "canceled", Created: t0.Add(-time.Second)},
			billing.OutcomeOutOfOrder, "paid", nil},
		{"an event of the same second applies", "paid", live,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "unpaid", Created: t0},
			billing.OutcomeDowngraded, "trial", nil},
		{"a canceled subscription stays canceled", "trial", canceled,
			billing.Event{Type: billing.EventSubscriptionUpdated, SubscriptionID: "sub_1", SubscriptionStatus: "active", Created: t0.Add(time.Hour)},
			billing.OutcomeOutOfOrder, "trial", nil},
		{"another subscription than the live one is ignored", "paid", live,
			billing.Event{Type: billing.EventSubscriptionDeleted, SubscriptionID: "sub_old", Created: t0.Add(time.Hour)},
			billing.OutcomeOtherSubscription, "paid", nil},
		{"a new subscription after a cancellation applies", "trial", canceled,
			billing.Event{Type: billing.EventSubscriptionCreated, SubscriptionID: "sub_2", SubscriptionStatus: "active", Created: t0.Add(-time.Hour)},
			billing.OutcomeUpgraded, "paid", func(t *testing.T, a billing.Account) {
				if a.SubscriptionID != "sub_2" {
					t.Errorf("subscription %q, want sub_2", a.SubscriptionID)
				}
			}},
		{"a new checkout after a cancellation resets the subscription", "trial", canceled,
			billing.Event{Type: billing.EventCheckoutCompleted, SubscriptionID: "sub_2", PaymentSettled: true},
			billing.OutcomeUpgraded, "paid", func(t *testing.T, a billing.Account) {
				if a.SubscriptionID != "sub_2" || a.SubscriptionStatus != "active" || a.SubscriptionEventAt != nil {
					t.Errorf("billing %+v", a.Billing)
				}
			}},
		{"invoice.paid records and upgrades", "trial", billing.Billing{SubscriptionID: "sub_1", SubscriptionStatus: "incomplete"},
			billing.Event{Type: billing.EventInvoicePaid, SubscriptionID: "sub_1", InvoiceID: "in_1", Created: t0},
			billing.OutcomeUpgraded, "paid", func(t *testing.T, a billing.Account) {
				if a.LastPaymentResult != "succeeded" || a.LastInvoiceID != "in_1" || !a.LastPaymentAt.Equal(t0) {
					t.Errorf("billing %+v", a.Billing)
				}
			}},
		{"invoice.paid does not revive a canceled subscription", "trial", canceled,
			billing.Event{Type: billing.EventInvoicePaid, SubscriptionID: "sub_1", Created: t0.Add(time.Hour)},
			billing.OutcomeRecorded, "trial", nil},
		{"invoice.payment_failed keeps the plan", "paid", live,
			billing.Event{Type: billing.EventInvoicePaymentFailed, SubscriptionID: "sub_1", InvoiceID: "in_2", Created: t0},
			billing.OutcomeRecorded, "paid", func(t *testing.T, a billing.Account) {
				if a.LastPaymentResult != "failed" {
					t.Errorf("last payment %q, want failed", a.LastPaymentResult)
				}
			}},
		{"an older invoice event is ignored", "paid", billing.Billing{SubscriptionID: "sub_1", SubscriptionStatus: "active", LastPaymentResult: "succeeded", LastPaymentAt: at(time.Hour)},
			billing.Event{Type: billing.EventInvoicePaymentFailed, SubscriptionID: "sub_1", Created: t0},
			billing.OutcomeOutOfOrder, "paid", func(t *testing.T, a billing.Account) {
				if a.LastPaymentResult != "succeeded" {
					t.Errorf("last payment %q, want succeeded", a.LastPaymentResult)
				}
			}},
		{"an invoice of another subscription is ignored", "paid", live,
			billing.Event{Type: billing.EventInvoicePaymentFailed, SubscriptionID: "sub_other", Created: t0.Add(time.Hour)},
			billing.OutcomeOtherSubscription, "paid", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := billing.Account{ID: "acct", Plan: c.plan, Billing: c.billing}
			got := billing.Apply(&a, c.event)
			if got != c.want || a.Plan != c.wantPlan {
				t.Fatalf("got %s on plan %s, want %s on plan %s", got, a.Plan, c.want, c.wantPlan)
			}
			if c.check != nil {
				c.check(t, a)
			}
		})
	}
}

func TestApplyKeepsAnAccountsEmail(t *testing.T) {
	t.Parallel()
	a := billing.Account{ID: "acct", Email: "old@b.c", Plan: "trial"}
	got := billing.Apply(&a, billing.Event{Type: billing.EventCheckoutCompleted, PaymentSettled: true, CustomerEmail: "new@b.c"})
	if got != billing.OutcomeUpgraded || a.Email != "old@b.c" || a.CustomerEmail != "new@b.c" {
		t.Fatalf("got %s, email %q, customer email %q; want upgraded, old@b.c, new@b.c", got, a.Email, a.CustomerEmail)
	}
}
