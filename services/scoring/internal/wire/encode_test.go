package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// checkMarshal compares the codec with the reference on v: the same bytes, or the same error. When
// the reference succeeds the hand-written path must have written the bytes itself (no fallback).
func checkMarshal(t *testing.T, ref, codec runtime.Marshaler, v proto.Message) {
	t.Helper()
	want, wantErr := ref.Marshal(v)
	got, gotErr := codec.Marshal(v)
	if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
		t.Fatalf("Marshal(%v): got error %v, want %v", v, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Marshal(%v):\n got %s\nwant %s", v, got, want)
	}
	if _, ok := encode(nil, v); ok != (wantErr == nil) {
		t.Fatalf("encode(%v) handled it by hand: %v, want %v (reference error %v)", v, ok, wantErr == nil, wantErr)
	}
}

func TestMarshalMatchesReferenceOnRandomMessages(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	g := gen{rand.New(rand.NewPCG(1, 2))}
	for range 5000 {
		res := &scoringv1.ScoreResult{}
		g.fill(res.ProtoReflect(), 0)
		checkMarshal(t, ref, codec, res)

		batch := &scoringv1.ScoreBatchResponse{}
		g.fill(batch.ProtoReflect(), 0)
		checkMarshal(t, ref, codec, batch)
	}
}

func TestMarshalMatchesReferenceOnEdgeCases(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	for name, v := range map[string]proto.Message{
		"empty result":                     &scoringv1.ScoreResult{},
		"nil result (response_body unset)": (*scoringv1.ScoreResult)(nil),
		"empty batch":                      &scoringv1.ScoreBatchResponse{},
		"nil batch":                        (*scoringv1.ScoreBatchResponse)(nil),
		"sample result":                    sampleResult(),
		"sample batch":                     sampleBatch(),
		"nil factor": &scoringv1.ScoreResult{Explanation: &scoringv1.Explanation{
			TopFactors: []*scoringv1.Factor{nil, {Feature: "x"}},
		}},
		"empty explanation": &scoringv1.ScoreResult{Explanation: &scoringv1.Explanation{}},
		"oneof member nil":  &scoringv1.ScoreResult{Details: &scoringv1.Details{Scoped: &scoringv1.Details_Denial{}}},
		"prior auth nil member": &scoringv1.ScoreResult{Details: &scoringv1.Details{
			Scoped: &scoringv1.Details_PriorAuth{},
		}},
		"prior auth": &scoringv1.ScoreResult{Details: &scoringv1.Details{Workflow: "healthcare.prior_auth", Scoped: &scoringv1.Details_PriorAuth{PriorAuth: &scoringv1.PriorAuthDetails{
			PriorAuthProbability: 1e-7,
			PayerSupport:         &scoringv1.PayerSupport{SupportLevel: "low", Note: "few <claims> & \"notes\""},
			PolicySignals: []*scoringv1.PolicySignal{nil, {
				ChangeEventId: "e1", MatchedCodes: []string{"72148"}, PublishedAt: &timestamppb.Timestamp{Seconds: -62135596800},
			}},
		}}}},
		"reimbursement": &scoringv1.ScoreResult{Details: &scoringv1.Details{Scoped: &scoringv1.Details_Reimbursement{Reimbursement: &scoringv1.ReimbursementDetails{
			ExpectedAllowedAmount: 1e21, BilledAmount: math.Copysign(0, -1), ReimbursementRatio: math.NaN(), Units: math.Inf(-1),
		}}}},
		"nil batch items": &scoringv1.ScoreBatchResponse{
			Results: []*scoringv1.BatchResult{nil, {Errors: []*scoringv1.FieldError{nil}}},
			Summary: &scoringv1.BatchSummary{},
		},
		"invalid UTF-8":         &scoringv1.ScoreResult{Workflow: "\xff"},
		"invalid UTF-8 deep":    &scoringv1.ScoreBatchResponse{Results: []*scoringv1.BatchResult{{Errors: []*scoringv1.FieldError{{Message: "a\xc3"}}}}},
		"nanos out of range":    &scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Nanos: 1e9}},
		"negative nanos":        &scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: 5, Nanos: -1}},
		"seconds out of range":  &scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: maxTimestampSeconds + 1}},
		"last valid timestamp":  &scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: maxTimestampSeconds, Nanos: maxTimestampNanos}},
		"first valid timestamp": &scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: minTimestampSeconds}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkMarshal(t, ref, codec, v)
		})
	}
}

func TestMarshalDelegatesOtherValues(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	for _, v := range []any{
		&scoringv1.ScoreResponse{Result: sampleResult()},
		&scoringv1.WorkflowSchema{Workflow: "healthcare.denial", RequiredFields: []string{"cpt_code"}},
		map[string]string{"detail": "x"},
		nil,
	} {
		want, wantErr := ref.Marshal(v)
		got, gotErr := codec.Marshal(v)
		if !bytes.Equal(got, want) || (wantErr == nil) != (gotErr == nil) {
			t.Errorf("Marshal(%v): got %s, %v; want %s, %v", v, got, gotErr, want, wantErr)
		}
	}
}

func TestNewEncoderWritesCompactJSONAndDelimiter(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	want, err := ref.Marshal(sampleResult())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc := codec.NewEncoder(&out)
	for range 2 {
		if err := enc.Encode(sampleResult()); err != nil {
			t.Fatal(err)
		}
	}
	if wantTwice := string(want) + "\n" + string(want) + "\n"; out.String() != wantTwice {
		t.Errorf("NewEncoder wrote %s, want %s", out.String(), wantTwice)
	}
	if got := codec.ContentType(sampleResult()); got != "application/json" {
		t.Errorf("ContentType: got %q, want application/json", got)
	}
	if got := string(codec.(runtime.Delimited).Delimiter()); got != "\n" {
		t.Errorf("Delimiter: got %q, want newline", got)
	}
}

// FuzzScoreResultJSON builds a result and a one-item batch around the fuzzed strings, doubles and
// timestamp, one oneof member chosen by which, and compares the codec's bytes with the reference's.
func FuzzScoreResultJSON(f *testing.F) {
	f.Add("healthcare.denial", "cpt family: imaging", 0.73125, -0.25, int64(1790000000), int32(123456000), uint8(0))
	f.Add("", "", 0.0, math.Copysign(0, -1), int64(0), int32(0), uint8(1))
	f.Add("<&>\"\\\u2028", "\x00\x1f\x7f", 1e-7, 1e21, int64(-62135596800), int32(999999999), uint8(2))
	f.Add("\xff", "é😀", math.NaN(), math.Inf(-1), int64(253402300800), int32(1000), uint8(3))
	f.Add("a\tb\nc", "\ufffd", 5e-324, math.MaxFloat64, int64(-1), int32(-1), uint8(4))
	ref := reference(f)
	codec := New(ref)
	f.Fuzz(func(t *testing.T, s1, s2 string, d1, d2 float64, secs int64, nanos int32, which uint8) {
		ts := &timestamppb.Timestamp{Seconds: secs, Nanos: nanos}
		details := &scoringv1.Details{Workflow: s1}
		switch which % 4 {
		case 0:
			details.Scoped = &scoringv1.Details_Denial{Denial: &scoringv1.DenialDetails{
				DenialProbability: d1, OperatingPoint: s2, Threshold: d2, DriftFlags: []string{s1, s2}, PredictedDenial: which&4 != 0,
			}}
		case 1:
			details.Scoped = &scoringv1.Details_PriorAuth{PriorAuth: &scoringv1.PriorAuthDetails{
				PriorAuthProbability: d2, PayerSupport: &scoringv1.PayerSupport{Note: s1},
				PolicySignals: []*scoringv1.PolicySignal{{Summary: s2, MatchedCodes: []string{s1}, PublishedAt: ts}},
			}}
		case 2:
			details.Scoped = &scoringv1.Details_Reimbursement{Reimbursement: &scoringv1.ReimbursementDetails{
				ExpectedAllowedAmount: d1, BilledAmount: d2, Units: d1 * d2,
			}}
		}
		res := &scoringv1.ScoreResult{
			Workflow: s1, Score: d1, RiskLevel: s2, Confidence: d2, ModelVersion: s1 + s2,
			Explanation: &scoringv1.Explanation{TopFactors: []*scoringv1.Factor{{Feature: s2, Contribution: d1, Direction: s1}}},
			Details:     details,
			ScoredAt:    ts,
		}
		checkMarshal(t, ref, codec, res)
		checkMarshal(t, ref, codec, &scoringv1.ScoreBatchResponse{
			Results: []*scoringv1.BatchResult{{Index: nanos, Id: s2, Status: int32(which), Result: res, Error: s1, Errors: []*scoringv1.FieldError{{Field: s1, Message: s2}}}},
			Summary: &scoringv1.BatchSummary{Total: nanos, Failed: -nanos},
		})
	})
}
