package stripebilling_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/pkg/stripebilling"
)

const secret = "whsec_test_secret"

func signed(t testing.TB, typ string, object map[string]any, at time.Time) ([]byte, string) {
	b, err := json.Marshal(map[string]any{"id": "evt_1", "object": "event", "api_version": stripe.APIVersion,
		"created": at.Unix(), "type": typ, "data": map[string]any{"object": object}})
	if err != nil {
		t.Fatal(err)
	}
	return b, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: b, Secret: secret, Timestamp: at}).Header
}

func client(base string) *stripebilling.Client {
	return stripebilling.New(stripebilling.Config{SecretKey: "sk_test_x", WebhookSecret: secret, PriceID: "price_x", APIBase: base,
		SuccessURL: "https://app.example/ok", CancelURL: "https://app.example/cancel"})
}

// FuzzVerifyEvent feeds webhook bodies and signature headers, which anyone can send, to the
// verifier: it must never panic, must answer only its documented errors, and must accept nothing
// that is not signed with the endpoint's secret.
func FuzzVerifyEvent(f *testing.F) {
	for _, seed := range []struct {
		typ    string
		object map[string]any
	}{
		{stripebilling.EventCheckoutCompleted, map[string]any{"id": "cs_1", "object": "checkout.session", "client_reference_id": "org",
			"status": "complete", "payment_status": "paid", "customer": "cus_1", "subscription": "sub_1"}},
		{stripebilling.EventSubscriptionUpdated, map[string]any{"id": "sub_1", "object": "subscription", "status": "active",
			"items": map[string]any{"data": []any{map[string]any{"id": "si_1", "current_period_end": 1900000000}}}}},
		{"charge.refunded", map[string]any{"id": "ch_1"}},
	} {
		payload, header := signed(f, seed.typ, seed.object, time.Now())
		f.Add(payload, header)
		f.Add(payload, strings.Replace(header, "v1=", "v0=", 1))
	}
	f.Add([]byte(`{"object":"event"}`), "t=1,v1=00")
	f.Add([]byte(``), "")
	c := client("")
	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		e, err := c.VerifyEvent(payload, header)
		if err != nil {
			if !errors.Is(err, stripebilling.ErrSignature) && !errors.Is(err, stripebilling.ErrStale) && !errors.Is(err, stripebilling.ErrInvalidEvent) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		var ts int64
		for part := range strings.SplitSeq(header, ",") {
			if k, v, _ := strings.Cut(part, "="); k == "t" {
				ts, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		want := hex.EncodeToString(webhook.ComputeSignature(time.Unix(ts, 0), payload, secret))
		ok := false
		for part := range strings.SplitSeq(header, ",") {
			if k, v, _ := strings.Cut(part, "="); k == "v1" && strings.EqualFold(v, want) {
				ok = true
			}
		}
		if !ok || e.ID == "" {
			t.Fatalf("accepted an event (%+v) whose header %q does not sign it", e, header)
		}
		// Decoding a verified object answers ErrInvalidEvent or a value, never a panic.
		for _, dec := range []func(stripebilling.Event) error{
			func(e stripebilling.Event) error { _, err := stripebilling.CheckoutSessionOf(e); return err },
			func(e stripebilling.Event) error { _, err := stripebilling.SubscriptionOf(e); return err },
			func(e stripebilling.Event) error { _, err := stripebilling.InvoiceOf(e); return err },
		} {
			if err := dec(e); err != nil && !errors.Is(err, stripebilling.ErrInvalidEvent) {
				t.Fatalf("undocumented decode error %v", err)
			}
		}
	})
}

func TestVerifyEventRefusals(t *testing.T) {
	t.Parallel()
	c := client("")
	payload, header := signed(t, stripebilling.EventSubscriptionDeleted, map[string]any{"id": "sub_1", "object": "subscription"}, time.Now())
	for _, tc := range []struct {
		name    string
		payload []byte
		header  string
		want    error
	}{
		{"no header", payload, "", stripebilling.ErrSignature},
		{"other secret", payload, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: "whsec_other"}).Header, stripebilling.ErrSignature},
		{"body changed", append([]byte(" "), payload...), header, stripebilling.ErrSignature},
		{"signed an hour ago", payload, webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now().Add(-time.Hour)}).Header, stripebilling.ErrStale},
	} {
		if _, err := c.VerifyEvent(tc.payload, tc.header); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	e, err := c.VerifyEvent(payload, header)
	if err != nil || e.ID != "evt_1" || e.Type != stripebilling.EventSubscriptionDeleted {
		t.Fatalf("a good delivery: got %+v %v", e, err)
	}
}

func TestObjects(t *testing.T) {
	t.Parallel()
	c := client("")
	payload, header := signed(t, stripebilling.EventSubscriptionUpdated, map[string]any{
		"id": "sub_1", "object": "subscription", "status": "past_due", "customer": "cus_1", "cancel_at_period_end": true,
		"metadata": map[string]any{"organization_id": "org"},
		"items": map[string]any{"data": []any{
			map[string]any{"id": "si_1", "current_period_start": 1890000000, "current_period_end": 1900000000},
			map[string]any{"id": "si_2", "current_period_start": 1890000500, "current_period_end": 1900000500}}},
	}, time.Now())
	e, err := c.VerifyEvent(payload, header)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := stripebilling.SubscriptionOf(e)
	if err != nil || sub.ID != "sub_1" || sub.Status != "past_due" || sub.CustomerID != "cus_1" || !sub.CancelAtPeriodEnd ||
		sub.Metadata["organization_id"] != "org" || sub.CurrentPeriodEnd.Unix() != 1900000500 || sub.CurrentPeriodStart.Unix() != 1890000500 {
		t.Fatalf("subscription read as %+v (%v)", sub, err)
	}
	payload, header = signed(t, stripebilling.EventCheckoutCompleted, map[string]any{
		"id": "cs_1", "object": "checkout.session", "status": "complete", "payment_status": "no_payment_required",
		"client_reference_id": "org", "customer_email": "X@Y.Z", "subscription": "sub_1", "customer": "cus_1",
	}, time.Now())
	if e, err = c.VerifyEvent(payload, header); err != nil {
		t.Fatal(err)
	}
	cs, err := stripebilling.CheckoutSessionOf(e)
	if err != nil || cs.ClientReferenceID != "org" || !cs.Settled || cs.CustomerEmail != "x@y.z" || cs.SubscriptionID != "sub_1" || cs.CustomerID != "cus_1" {
		t.Fatalf("checkout read as %+v (%v)", cs, err)
	}
	payload, header = signed(t, stripebilling.EventInvoicePaid, map[string]any{"id": "in_1", "object": "invoice", "customer": "cus_1",
		"parent": map[string]any{"subscription_details": map[string]any{"subscription": "sub_1", "metadata": map[string]any{"organization_id": "org"}}}}, time.Now())
	if e, err = c.VerifyEvent(payload, header); err != nil {
		t.Fatal(err)
	}
	if inv, err := stripebilling.InvoiceOf(e); err != nil || inv.SubscriptionID != "sub_1" || inv.SubscriptionMetadata["organization_id"] != "org" || inv.CustomerID != "cus_1" {
		t.Fatalf("invoice read as %+v (%v)", inv, err)
	}
}

// TestCreateCheckout: stripe-go sends the documented form to the configured API base, and a refusal
// by Stripe is ErrProcessor.
func TestCreateCheckout(t *testing.T) {
	t.Parallel()
	var form url.Values
	var auth string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/checkout/sessions" || r.ParseForm() != nil {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		form, auth = r.PostForm, r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		if refuse {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such price"}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "cs_test_1", "object": "checkout.session",
			"url": "https://checkout.stripe.test/c/pay/cs_test_1", "expires_at": 1900000000})
	}))
	defer srv.Close()
	c := client(srv.URL)
	s, err := c.CreateCheckout(context.Background(), stripebilling.CheckoutRequest{
		ClientReferenceID: "org", Metadata: map[string]string{"organization_id": "org"},
		SubscriptionMetadata: map[string]string{"organization_id": "org"}, Quantity: 1, CustomerID: "cus_1", CancelURL: "https://app.example/back",
	})
	if err != nil || s.ID != "cs_test_1" || s.URL != "https://checkout.stripe.test/c/pay/cs_test_1" || s.ExpiresAt.Unix() != 1900000000 {
		t.Fatalf("got %+v %v", s, err)
	}
	for k, want := range map[string]string{
		"mode": "subscription", "client_reference_id": "org", "line_items[0][price]": "price_x", "line_items[0][quantity]": "1",
		"metadata[organization_id]": "org", "subscription_data[metadata][organization_id]": "org", "customer": "cus_1",
		"success_url": "https://app.example/ok", "cancel_url": "https://app.example/back",
	} {
		if got := form.Get(k); got != want {
			t.Errorf("form %s = %q, want %q", k, got, want)
		}
	}
	if auth != "Bearer sk_test_x" {
		t.Errorf("Authorization = %q, want the secret key", auth)
	}
	refuse = true
	if _, err := c.CreateCheckout(context.Background(), stripebilling.CheckoutRequest{ClientReferenceID: "org"}); !errors.Is(err, stripebilling.ErrProcessor) {
		t.Fatalf("a refused checkout: got %v, want ErrProcessor", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  stripebilling.Config
		errs int
	}{
		{"off", stripebilling.Config{}, 0},
		{"on", stripebilling.Config{SecretKey: "sk_test_1", WebhookSecret: "whsec_1", PriceID: "price_1"}, 0},
		{"restricted key", stripebilling.Config{SecretKey: "rk_test_1", WebhookSecret: "whsec_1", PriceID: "price_1"}, 0},
		{"half", stripebilling.Config{SecretKey: "sk_test_1"}, 2},
		{"wrong forms", stripebilling.Config{SecretKey: "pk_1", WebhookSecret: "whsec_", PriceID: "prod_1"}, 3},
		{"bad url", stripebilling.Config{APIBase: "ftp://x"}, 1},
	} {
		if errs := tc.cfg.Validate("X_"); len(errs) != tc.errs {
			t.Errorf("%s: got %v, want %d errors", tc.name, errs, tc.errs)
		}
	}
}
