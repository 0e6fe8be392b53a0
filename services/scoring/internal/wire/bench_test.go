package wire

import (
	"bytes"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// marshalers are the two sides of every benchmark: pkg/gateway's protojson + json.Compact, and the
// codec wrapped around it.
func marshalers(b *testing.B) []struct {
	name string
	m    runtime.Marshaler
} {
	ref := reference(b)
	return []struct {
		name string
		m    runtime.Marshaler
	}{{"reference", ref}, {"wire", New(ref)}}
}

func benchMarshal(b *testing.B, v proto.Message) {
	for _, tc := range marshalers(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tc.m.Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMarshalScoreResult is the answer of POST /v1/score (response_body: "result").
func BenchmarkMarshalScoreResult(b *testing.B) { benchMarshal(b, sampleResult()) }

// BenchmarkMarshalBatch100 is the answer of POST /v1/score/batch with 100 items.
func BenchmarkMarshalBatch100(b *testing.B) { benchMarshal(b, sampleBatch()) }

func benchDecode(b *testing.B, body []byte, newMsg func() proto.Message) {
	for _, tc := range marshalers(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				// As the generated gateway handler does: a decoder per request body, one Decode.
				if err := tc.m.NewDecoder(bytes.NewReader(body)).Decode(newMsg()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeScoreRequest is the body of POST /v1/score: the first item of the batch body.
func BenchmarkDecodeScoreRequest(b *testing.B) {
	var batch scoringv1.ScoreBatchRequest
	if _, err := decodeRequest(string(sampleBatchBody()), &batch); err != nil {
		b.Fatal(err)
	}
	item := batch.GetItems()[0]
	body, err := reference(b).Marshal(&scoringv1.ScoreRequest{Workflow: item.GetWorkflow(), Payload: item.GetPayload(), Options: item.GetOptions()})
	if err != nil {
		b.Fatal(err)
	}
	benchDecode(b, body, func() proto.Message { return &scoringv1.ScoreRequest{} })
}

// BenchmarkDecodeBatch100 is the body of POST /v1/score/batch with 100 items.
func BenchmarkDecodeBatch100(b *testing.B) {
	benchDecode(b, sampleBatchBody(), func() proto.Message { return &scoringv1.ScoreBatchRequest{} })
}
