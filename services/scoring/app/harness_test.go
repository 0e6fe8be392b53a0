package app_test

import (
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

const adminToken = "scoring-test-admin-token"

// stack is one scoring service started in-process (pkg/servicetest) with the scoring helpers below.
type stack struct {
	*servicetest.Service
	t testing.TB
}

// testEnv is a fresh database and NATS namespace, the admin token and a short flush interval, then extra.
func testEnv(t testing.TB, extra map[string]string) map[string]string {
	return servicetest.Env(t, app.EnvPrefix, map[string]string{
		"SCORING_ADMIN_TOKEN":          adminToken,
		"SCORING_USAGE_FLUSH_INTERVAL": "100ms",
	}, extra)
}

func startService(t testing.TB, extra map[string]string) *stack {
	return startWithEnv(t, testEnv(t, extra))
}

// startWithEnv starts the service; Stop (also run at cleanup) shuts it down gracefully.
func startWithEnv(t testing.TB, env map[string]string) *stack {
	return startBoot(t, env, app.Boot)
}

// startBoot starts the service with boot, app.Boot or one with options.
func startBoot(t testing.TB, env map[string]string, boot servicetest.Boot) *stack {
	t.Helper()
	return &stack{Service: servicetest.Start(t, env, boot), t: t}
}

var admin = servicetest.Admin(adminToken)

func bearer(key string) map[string]string { return servicetest.Bearer(key) }

// trialKey issues a trial key.
func (s *stack) trialKey() string {
	s.t.Helper()
	r := s.Do("POST", "/v1/keys/trial", nil, nil)
	if r.Status != 201 {
		s.t.Fatalf("trial key: %d %s", r.Status, r.Body)
	}
	return r.Object(s.t)["api_key"].(string)
}

// paidKey issues a key on the paid plan (no 1 request/s limit), for tests that score a lot.
func (s *stack) paidKey() string { return s.issueKey("paid") }

// issueKey issues a key on plan through the admin route.
func (s *stack) issueKey(plan string) string {
	s.t.Helper()
	r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": plan}, admin)
	if r.Status != 201 {
		s.t.Fatalf("%s key: %d %s", plan, r.Status, r.Body)
	}
	return r.Object(s.t)["api_key"].(string)
}

// scoreDenial scores the valid denial claim with key.
func (s *stack) scoreDenial(key string) servicetest.Reply {
	return s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()}, bearer(key))
}

// denialClaim is a valid denial payload.
func denialClaim() map[string]any {
	return map[string]any{
		"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567,
		"payer_id": 60054, "cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0,
		"place_of_service": "11", "network_status": "in_network",
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
