package app

import (
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
)

func TestWebhookSettingsDefaults(t *testing.T) {
	var s WebhookSettings
	if err := config.Load(func(string) string { return "" }, "VERIFICATION_", &s); err != nil {
		t.Fatal(err)
	}
	if s.Workers != 64 || s.MaxAttempts != 10 || s.DisableAfter != 5 || s.MaxActiveWatches != 100 ||
		s.Timeout != 10*time.Second || s.RetryBase != 30*time.Second || s.RetryMax != 4*time.Hour || len(s.allowPrivate) != 0 {
		t.Fatalf("defaults = %+v", s)
	}
}

func TestWebhookSettingsErrorsNameVariables(t *testing.T) {
	env := map[string]string{
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":   "0.0.0.0/0",
		"VERIFICATION_WEBHOOK_WORKERS":       "0",
		"VERIFICATION_WEBHOOK_MAX_ATTEMPTS":  "99",
		"VERIFICATION_WEBHOOK_RETRY_MAX":     "1s",
		"VERIFICATION_WEBHOOK_REQUEUE_AFTER": "1s",
		"VERIFICATION_WATCH_LIMIT":           "0",
		"VERIFICATION_WEBHOOK_TIMEOUT":       "2m",
	}
	var s WebhookSettings
	err := config.Load(func(k string) string { return env[k] }, "VERIFICATION_", &s)
	if err == nil {
		t.Fatal("want errors")
	}
	for k := range env {
		if !strings.Contains(err.Error(), k+":") {
			t.Errorf("error does not name %s:\n%v", k, err)
		}
	}
}
