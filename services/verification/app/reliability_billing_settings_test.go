package app

import (
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
)

func TestReliabilityBillingSettings(t *testing.T) {
	var off ReliabilityBillingSettings
	if err := config.Load(func(string) string { return "" }, "VERIFICATION_", &off); err != nil {
		t.Fatalf("no Stripe settings (billing off): %v", err)
	}
	if off.stripe().Configured() || off.StripeWebhookTolerance != 5*time.Minute {
		t.Fatalf("defaults = %+v, want billing off and a 5m tolerance", off)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		names []string
	}{
		{"a secret alone", map[string]string{"VERIFICATION_STRIPE_SECRET_KEY": "sk_test_1"},
			[]string{"VERIFICATION_STRIPE_WEBHOOK_SECRET", "VERIFICATION_STRIPE_PRICE_ID", "VERIFICATION_STRIPE_SUCCESS_URL", "VERIFICATION_STRIPE_CANCEL_URL"}},
		{"wrong forms", map[string]string{"VERIFICATION_STRIPE_SECRET_KEY": "pk_live_1", "VERIFICATION_STRIPE_WEBHOOK_SECRET": "secret",
			"VERIFICATION_STRIPE_PRICE_ID": "prod_1", "VERIFICATION_STRIPE_SUCCESS_URL": "ftp://x", "VERIFICATION_STRIPE_CANCEL_URL": "https://app.example/c",
			"VERIFICATION_STRIPE_WEBHOOK_TOLERANCE": "2h"},
			[]string{"VERIFICATION_STRIPE_SECRET_KEY", "VERIFICATION_STRIPE_WEBHOOK_SECRET", "VERIFICATION_STRIPE_PRICE_ID", "VERIFICATION_STRIPE_SUCCESS_URL", "VERIFICATION_STRIPE_WEBHOOK_TOLERANCE"}},
	} {
		var s ReliabilityBillingSettings
		err := config.Load(func(k string) string { return tc.env[k] }, "VERIFICATION_", &s)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		for _, name := range tc.names {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s: the error does not name %s:\n%v", tc.name, name, err)
			}
		}
		if strings.Contains(err.Error(), "pk_live_1") {
			t.Errorf("%s: the error repeats a secret:\n%v", tc.name, err)
		}
	}
	on := map[string]string{"VERIFICATION_STRIPE_SECRET_KEY": "sk_test_1", "VERIFICATION_STRIPE_WEBHOOK_SECRET": "whsec_1",
		"VERIFICATION_STRIPE_PRICE_ID": "price_1", "VERIFICATION_STRIPE_SUCCESS_URL": "https://app.example/ok", "VERIFICATION_STRIPE_CANCEL_URL": "https://app.example/back"}
	var s ReliabilityBillingSettings
	if err := config.Load(func(k string) string { return on[k] }, "VERIFICATION_", &s); err != nil || !s.stripe().Configured() {
		t.Fatalf("complete settings: %v (configured %v)", err, s.stripe().Configured())
	}
}
