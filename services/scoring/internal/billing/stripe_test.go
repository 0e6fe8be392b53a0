package billing_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
)

const fuzzSecret = "whsec_fuzz"

func signedEvent(t testing.TB, typ string, object map[string]any) ([]byte, string) {
	b, err := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "api_version": stripe.APIVersion,
		"created": time.Now().Unix(), "type": typ, "data": map[string]any{"object": object}})
	if err != nil {
		t.Fatal(err)
	}
	return b, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: fuzzSecret}).Header
}

// FuzzParseEvent feeds webhook bodies and signature headers, which anyone can send, to the parser:
// it must never panic, must answer only its documented errors, and must accept nothing that is not
// signed with the endpoint's secret.
func FuzzParseEvent(f *testing.F) {
	for _, seed := range []struct {
		typ    string
		object map[string]any
	}{
		{billing.EventCheckoutCompleted, map[string]any{"id": "cs_1", "object": "checkout.session", "client_reference_id": "0190f1c2-0000-7000-8000-000000000000",
			"status": "complete", "payment_status": "paid", "customer": "cus_1", "subscription": "sub_1", "customer_details": map[string]any{"email": "A@B.C"}}},
		{billing.EventSubscriptionUpdated, map[string]any{"id": "sub_1", "object": "subscription", "status": "active", "customer": map[string]any{"id": "cus_1", "object": "customer"},
			"items": map[string]any{"data": []any{map[string]any{"id": "si_1", "current_period_end": 1900000000}}}}},
		{billing.EventInvoicePaid, map[string]any{"id": "in_1", "object": "invoice", "parent": map[string]any{"subscription_details": map[string]any{"subscription": "sub_1"}}}},
		{"charge.refunded", map[string]any{"id": "ch_1"}},
	} {
		payload, header := signedEvent(f, seed.typ, seed.object)
		f.Add(payload, header)
		f.Add(payload, strings.Replace(header, "v1=", "v0=", 1))
	}
	f.Add([]byte(`{"object":"event"}`), "t=1,v1=00")
	f.Add([]byte(``), "")
	p := billing.NewStripe(billing.StripeConfig{SecretKey: "sk_test_x", WebhookSecret: fuzzSecret, PriceID: "price_x"})
	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		e, err := p.ParseEvent(payload, header)
		if err != nil {
			if !errors.Is(err, billing.ErrSignature) && !errors.Is(err, billing.ErrStale) && !errors.Is(err, billing.ErrInvalidEvent) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		// Accepted: the header must carry the HMAC of this payload at its own timestamp.
		var ts int64
		signed := false
		for _, part := range strings.Split(header, ",") {
			k, v, _ := strings.Cut(part, "=")
			if k == "t" {
				ts, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		want := hex.EncodeToString(webhook.ComputeSignature(time.Unix(ts, 0), payload, fuzzSecret))
		for _, part := range strings.Split(header, ",") {
			if k, v, _ := strings.Cut(part, "="); k == "v1" && strings.EqualFold(v, want) {
				signed = true
			}
		}
		if !signed || e.ID == "" {
			t.Fatalf("accepted an event (%+v) whose header %q does not sign it", e, header)
		}
	})
}

func TestParseEventReadsTheObjects(t *testing.T) {
	t.Parallel()
	p := billing.NewStripe(billing.StripeConfig{SecretKey: "sk_test_x", WebhookSecret: fuzzSecret, PriceID: "price_x"})
	payload, header := signedEvent(t, billing.EventSubscriptionUpdated, map[string]any{
		"id": "sub_1", "object": "subscription", "status": "past_due", "customer": "cus_1", "cancel_at_period_end": true,
		"metadata": map[string]any{"account_id": "acct"},
		"items":    map[string]any{"data": []any{map[string]any{"id": "si_1", "current_period_end": 1900000000}, map[string]any{"id": "si_2", "current_period_end": 1900000500}}},
	})
	e, err := p.ParseEvent(payload, header)
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "evt_1" || e.AccountID != "acct" || e.SubscriptionID != "sub_1" || e.SubscriptionStatus != "past_due" || e.CustomerID != "cus_1" ||
		!e.CancelAtPeriodEnd || e.CurrentPeriodEnd == nil || e.CurrentPeriodEnd.Unix() != 1900000500 {
		t.Fatalf("subscription event read as %+v", e)
	}

	payload, header = signedEvent(t, billing.EventInvoicePaymentFailed, map[string]any{
		"id": "in_1", "object": "invoice", "customer": "cus_1",
		"parent": map[string]any{"subscription_details": map[string]any{"subscription": "sub_1", "metadata": map[string]any{"account_id": "acct"}}},
	})
	if e, err = p.ParseEvent(payload, header); err != nil || e.InvoiceID != "in_1" || e.SubscriptionID != "sub_1" || e.AccountID != "acct" || e.CustomerID != "cus_1" {
		t.Fatalf("invoice event read as %+v (%v)", e, err)
	}

	payload, header = signedEvent(t, billing.EventCheckoutCompleted, map[string]any{
		"id": "cs_1", "object": "checkout.session", "status": "complete", "payment_status": "no_payment_required",
		"metadata": map[string]any{"account_id": "acct"}, "customer_email": "X@Y.Z",
	})
	if e, err = p.ParseEvent(payload, header); err != nil || e.AccountID != "acct" || !e.PaymentSettled || e.CustomerEmail != "x@y.z" {
		t.Fatalf("checkout event read as %+v (%v)", e, err)
	}
}
