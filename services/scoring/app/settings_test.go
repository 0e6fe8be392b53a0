package app

import (
	"strings"
	"testing"
	"time"
)

// adminToken is long enough for the configuration to accept it.
const adminToken = "scoring-test-admin-token"

func TestBillingSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"SCORING_DATABASE_URL": "postgres://localhost/scoring", "SCORING_ADMIN_TOKEN": adminToken}
	for _, c := range []struct {
		name  string
		env   map[string]string
		wants []string // variables the error names; none for a valid configuration
	}{
		{"none", nil, nil},
		{"all three", map[string]string{"SCORING_STRIPE_SECRET_KEY": "sk_live_x", "SCORING_STRIPE_WEBHOOK_SECRET": "whsec_x", "SCORING_STRIPE_PRICE_ID": "price_x"}, nil},
		{"restricted key and a local peer", map[string]string{"SCORING_STRIPE_SECRET_KEY": "rk_test_x", "SCORING_STRIPE_WEBHOOK_SECRET": "whsec_x",
			"SCORING_STRIPE_PRICE_ID": "price_x", "SCORING_STRIPE_API_BASE": "http://127.0.0.1:12111"}, nil},
		{"key alone", map[string]string{"SCORING_STRIPE_SECRET_KEY": "sk_test_x"}, []string{"SCORING_STRIPE_WEBHOOK_SECRET", "SCORING_STRIPE_PRICE_ID"}},
		{"wrong forms", map[string]string{"SCORING_STRIPE_SECRET_KEY": "pk_test_x", "SCORING_STRIPE_WEBHOOK_SECRET": "secret", "SCORING_STRIPE_PRICE_ID": "prod_x"},
			[]string{"SCORING_STRIPE_SECRET_KEY", "SCORING_STRIPE_WEBHOOK_SECRET", "SCORING_STRIPE_PRICE_ID"}},
		{"bad URLs", map[string]string{"SCORING_STRIPE_API_BASE": "api.stripe.com", "SCORING_STRIPE_SUCCESS_URL": "ftp://x/y"},
			[]string{"SCORING_STRIPE_API_BASE", "SCORING_STRIPE_SUCCESS_URL"}},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.env {
			env[k] = v
		}
		_, err := loadConfig(func(k string) string { return env[k] })
		if len(c.wants) == 0 {
			if err != nil {
				t.Errorf("%s: %v, want a valid configuration", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %v", c.name, c.wants)
			continue
		}
		for _, v := range c.wants {
			if !strings.Contains(err.Error(), v+":") {
				t.Errorf("%s: error %q does not name %s", c.name, err, v)
			}
		}
		for _, secret := range []string{"sk_test_x", "pk_test_x", "whsec_x"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error %q shows a secret", c.name, err)
			}
		}
	}
}

func TestOAuthSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for valid
	}{
		{"none", nil, ""},
		{"short OAuth secret", map[string]string{"SCORING_OAUTH_SECRET": "too-short"}, "SCORING_OAUTH_SECRET: must be at least 32 characters"},
		{"OAuth secret", map[string]string{"SCORING_OAUTH_SECRET": strings.Repeat("k", 32)}, ""},
		{"all", map[string]string{"SCORING_OIDC_ISSUER": "https://idp.example", "SCORING_OIDC_CLIENT_ID": "c", "SCORING_OIDC_CLIENT_SECRET": "s"}, ""},
		{"loopback http", map[string]string{"SCORING_OIDC_ISSUER": "http://127.0.0.1:9000/oidc", "SCORING_OIDC_CLIENT_ID": "c", "SCORING_OIDC_CLIENT_SECRET": "s"}, ""},
		{"no secret", map[string]string{"SCORING_OIDC_ISSUER": "https://idp.example", "SCORING_OIDC_CLIENT_ID": "c"}, "SCORING_OIDC_CLIENT_SECRET: required"},
		{"only secret", map[string]string{"SCORING_OIDC_CLIENT_SECRET": "s"}, "SCORING_OIDC_ISSUER: required"},
		{"plain http", map[string]string{"SCORING_OIDC_ISSUER": "http://idp.example", "SCORING_OIDC_CLIENT_ID": "c", "SCORING_OIDC_CLIENT_SECRET": "s"}, "SCORING_OIDC_ISSUER: must be https"},
		{"not a URL", map[string]string{"SCORING_OIDC_ISSUER": "idp", "SCORING_OIDC_CLIENT_ID": "c", "SCORING_OIDC_CLIENT_SECRET": "s"}, "SCORING_OIDC_ISSUER: not an issuer URL"},
	} {
		env := map[string]string{"SCORING_DATABASE_URL": "postgres://x@127.0.0.1/x", "SCORING_ADMIN_TOKEN": adminToken}
		for k, v := range tc.env {
			env[k] = v
		}
		_, err := loadConfig(func(k string) string { return env[k] })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestIntervalAndLimitSettings: SCORING_USAGE_FLUSH_INTERVAL (the meter's flush interval, and so the
// usage a SIGKILL can lose) and the trial key limits are read, and values out of range refuse the start.
func TestIntervalAndLimitSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for valid
	}{
		{"defaults", nil, ""},
		{"flush 250ms", map[string]string{"SCORING_USAGE_FLUSH_INTERVAL": "250ms"}, ""},
		{"flush too short", map[string]string{"SCORING_USAGE_FLUSH_INTERVAL": "5ms"}, "SCORING_USAGE_FLUSH_INTERVAL: must be between 10ms and 1m"},
		{"flush too long", map[string]string{"SCORING_USAGE_FLUSH_INTERVAL": "2m"}, "SCORING_USAGE_FLUSH_INTERVAL: must be between 10ms and 1m"},
		{"flush not a duration", map[string]string{"SCORING_USAGE_FLUSH_INTERVAL": "soon"}, "USAGE_FLUSH_INTERVAL"},
		{"trial limits", map[string]string{"SCORING_TRIAL_KEYS_PER_ADDRESS": "2", "SCORING_TRIAL_KEYS_PER_HOUR": "30"}, ""},
		{"no trial keys per address", map[string]string{"SCORING_TRIAL_KEYS_PER_ADDRESS": "0"}, "SCORING_TRIAL_KEYS_PER_ADDRESS: must be between 1 and 10000"},
		{"negative trial keys per hour", map[string]string{"SCORING_TRIAL_KEYS_PER_HOUR": "-1"}, "SCORING_TRIAL_KEYS_PER_HOUR: must be between 1 and 1000000"},
	} {
		env := map[string]string{"SCORING_DATABASE_URL": "postgres://x@127.0.0.1/x", "SCORING_ADMIN_TOKEN": adminToken}
		for k, v := range tc.env {
			env[k] = v
		}
		cfg, err := loadConfig(func(k string) string { return env[k] })
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
		if err != nil {
			continue
		}
		s := cfg.Settings
		if want := map[string]time.Duration{"defaults": time.Second, "flush 250ms": 250 * time.Millisecond}[tc.name]; want != 0 && s.UsageFlushInterval != want {
			t.Errorf("%s: flush interval %v, want %v", tc.name, s.UsageFlushInterval, want)
		}
		if tc.name == "defaults" && (s.TrialKeysPerAddress != 5 || s.TrialKeysPerHour != 100) {
			t.Errorf("default trial limits %d per address, %d per hour; want 5 and 100", s.TrialKeysPerAddress, s.TrialKeysPerHour)
		}
		if tc.name == "trial limits" && (s.TrialKeysPerAddress != 2 || s.TrialKeysPerHour != 30) {
			t.Errorf("trial limits %d, %d; want 2 and 30", s.TrialKeysPerAddress, s.TrialKeysPerHour)
		}
	}
}
