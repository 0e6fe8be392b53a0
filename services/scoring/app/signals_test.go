package app_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/bus"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
)

// publishChange publishes a policy.change event the way the ingestion service's relay does.
func publishChange(t *testing.T, s *stack, ev *ingestionv1.PolicyChangePublished) {
	t.Helper()
	b, err := bus.Connect(s.Env["NATS_URL"], s.Env["NATS_NAMESPACE"], "scoring-test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.EnsureStream(ctx, bus.PolicyChanges); err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: b.Subject("policy.change." + ev.GetChangeType()), Data: data, Header: nats.Header{}}
	msg.Header.Set(nats.MsgIdHdr, ev.GetChangeEventId())
	if _, err := b.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestPolicySignalsReachPriorAuth(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := bearer(s.paidKey())
	claim := with(denialClaim(), "cpt_code", "72148", "payer_id", 60054)
	priorAuth := func() map[string]any {
		r := s.Do("POST", "/v1/score", map[string]any{"workflow": "healthcare.prior_auth", "payload": claim}, key)
		if r.Status != 200 {
			t.Fatalf("prior auth: %d %s", r.Status, r.Body)
		}
		return r.Object(t)
	}
	before := priorAuth()

	// Mapping management is admin-only and validated.
	if r := s.Do("PUT", "/v1/policy-signals/payers/60054", map[string]any{"organization": "Acme Health"}, key); r.Status != 401 {
		t.Fatalf("mapping with a bearer key: %d", r.Status)
	}
	if r := s.Do("PUT", "/v1/policy-signals/payers/60054", map[string]any{"organization": " "}, admin); r.Status != 422 {
		t.Fatalf("empty organization: %d", r.Status)
	}
	if r := s.Do("PUT", "/v1/policy-signals/payers/60054", map[string]any{"organization": "Acme Health"}, admin); r.Status != 200 {
		t.Fatalf("mapping: %d %s", r.Status, r.Body)
	}
	ev := &ingestionv1.PolicyChangePublished{
		ChangeEventId: "0192f6a0-0000-7000-8000-000000000001", Organization: "Acme Health", ChangeType: "prior_auth_added",
		Summary: "Prior authorization now required for lumbar MRI", AffectedCodes: []string{"72148", "72149"},
		PolicyUrl: "https://payer.example/policies/imaging", Confidence: 0.97, PublishedAt: timestamppb.Now(),
	}
	publishChange(t, s, ev)
	publishChange(t, s, ev) // a redelivery is a no-op
	// An event for codes the claim does not carry is stored but does not match.
	publishChange(t, s, &ingestionv1.PolicyChangePublished{ChangeEventId: "0192f6a0-0000-7000-8000-000000000002",
		Organization: "Acme Health", ChangeType: "prior_auth_added", AffectedCodes: []string{"97110"}, PublishedAt: timestamppb.Now()})

	for _, limit := range []string{"-1", "101"} {
		if r := s.Do("GET", "/v1/policy-signals?limit="+limit, nil, admin); r.Status != 422 {
			t.Fatalf("limit %s: %d %s", limit, r.Status, r.Body)
		}
	}
	eventually(t, "two stored signals", func() bool {
		r := s.Do("GET", "/v1/policy-signals?organization=Acme%20Health", nil, admin)
		signals, _ := r.Object(t)["signals"].([]any)
		return len(signals) == 2
	})
	after := priorAuth()
	pa := after["details"].(map[string]any)["prior_auth"].(map[string]any)
	signals := pa["policy_signals"].([]any)
	if len(signals) != 1 || signals[0].(map[string]any)["change_event_id"] != ev.ChangeEventId {
		t.Fatalf("matched signals: %v", signals)
	}
	if after["score"].(float64) <= before["score"].(float64) {
		t.Fatalf("a prior_auth_added signal did not raise the score: %v -> %v", before["score"], after["score"])
	}
	factors, _ := after["explanation"].(map[string]any)["top_factors"].([]any)
	found := false
	for _, f := range factors {
		found = found || strings.Contains(strings.ToLower(f.(map[string]any)["feature"].(string)), "policy")
	}
	if !found {
		t.Fatalf("no policy factor among %v", factors)
	}

	// The decision log names the signal and the support level, and no claim field.
	logs := s.Logs.String()
	if !strings.Contains(logs, ev.ChangeEventId) || !strings.Contains(logs, `"support_level"`) {
		t.Fatalf("decision log lacks signal or support level")
	}
	for _, phi := range []string{"CLM-1001", "1234567", "E11.9"} {
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, "scoring decision") && strings.Contains(line, phi) {
				t.Fatalf("decision log carries claim data %q: %s", phi, line)
			}
		}
	}

	// Removing the mapping detaches the payer's signals.
	if r := s.Do("DELETE", "/v1/policy-signals/payers/60054", nil, admin); r.Status != 204 {
		t.Fatalf("delete mapping: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/policy-signals/payers/60054", nil, admin); r.Status != 404 {
		t.Fatalf("delete again: %d", r.Status)
	}
	pa = priorAuth()["details"].(map[string]any)["prior_auth"].(map[string]any)
	if len(pa["policy_signals"].([]any)) != 0 {
		t.Fatalf("signals after unmapping: %v", pa["policy_signals"])
	}
}
