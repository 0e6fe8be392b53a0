package api

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// discardSink stands in for PostgreSQL: the flush runs in the background and is not what the
// limiter-on/limiter-off comparison measures.
type discardSink struct{}

func (discardSink) WriteBatch(context.Context, meter.Batch) error        { return nil }
func (discardSink) Usage(context.Context, string, string) (int64, error) { return 0, nil }

// unlimited admits every request and counts none, but stores each request's record through the meter.
type unlimited struct{ m *meter.Meter }

func (u unlimited) Admit(_ context.Context, _ string, _ meter.Plan, n int) (meter.Ticket, error) {
	return u.m.Unlimited(n), nil
}

// unmetered admits every request and meters none, so it stores no request record either.
type unmetered struct{}

func (unmetered) Admit(context.Context, string, meter.Plan, int) (meter.Ticket, error) {
	return meter.Ticket{}, nil
}

// BenchmarkScoreHandler measures the unified scoring handler and its use case (validation, routing,
// model, response, decision log) with the production limiter and meter, and with neither: limits and
// metering must keep at least 0.9x the throughput (README "Performance"); compare the ns/op of the
// sub-benchmarks.
func BenchmarkScoreHandler(b *testing.B) {
	models, err := model.Load()
	if err != nil {
		b.Fatal(err)
	}
	engine := decision.New(models, policysignal.NewIndex(), decision.Config{})
	payload, err := structpb.NewStruct(map[string]any{
		"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567, "payer_id": 60054,
		"cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0, "place_of_service": "11", "network_status": "in_network",
	})
	if err != nil {
		b.Fatal(err)
	}
	req := &scoringv1.ScoreRequest{Workflow: "healthcare.denial", Payload: payload}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	// Many paid keys, as in production: one key's 50 requests/s would otherwise refuse most calls.
	// Each call has a request id of its own, as RequestIDs gives it, so that its record is queued: a
	// pending id comes round again only after a flush (at the meter's default batch of 20,000) took it.
	accounts := make([]keys.Key, 1024)
	for i := range accounts {
		accounts[i] = keys.Key{ID: uuid.NewString(), AccountID: uuid.NewString(), Plan: "commit", Prefix: "sk_bench"}
	}
	callers := make([]context.Context, 1<<15)
	for i := range callers {
		ctx := context.WithValue(context.Background(), callerKey{}, accounts[i%len(accounts)])
		callers[i] = context.WithValue(ctx, requestIDKey{}, newRequestID())
	}
	m := meter.New(discardSink{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = m.Run(ctx) }()
	for _, tc := range []struct {
		name    string
		limiter score.Limiter
	}{{"records_off", unmetered{}}, {"limits_and_metering_off", unlimited{m}}, {"limits_and_metering_on", m}} {
		s := NewScoring(score.New(engine, tc.limiter, log), models)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Score(callers[i%len(callers)], req); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
