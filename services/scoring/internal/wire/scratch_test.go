package wire

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

func TestScratch(t *testing.T) {
	o := protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true}
	try := func(name string, f func() ([]byte, error)) {
		defer func() {
			if r := recover(); r != nil {
				fmt.Println(name, "PANIC", r)
			}
		}()
		b, err := f()
		fmt.Printf("%s: %s err=%v\n", name, b, err)
	}
	var nilRes *scoringv1.ScoreResult
	try("nil", func() ([]byte, error) { return o.Marshal(nilRes) })
	try("nilfactor", func() ([]byte, error) {
		return o.Marshal(&scoringv1.ScoreResult{Explanation: &scoringv1.Explanation{TopFactors: []*scoringv1.Factor{nil}}})
	})
	try("oneofnil", func() ([]byte, error) {
		return o.Marshal(&scoringv1.Details{Scoped: &scoringv1.Details_Denial{}})
	})
	try("ts1e9", func() ([]byte, error) {
		return o.Marshal(&scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 1e9}})
	})
	try("ts1e9b", func() ([]byte, error) {
		return o.Marshal(&scoringv1.ScoreResult{ScoredAt: &timestamppb.Timestamp{Seconds: 5, Nanos: 1e9}})
	})
	try("batchnil", func() ([]byte, error) {
		return o.Marshal(&scoringv1.ScoreBatchResponse{Results: []*scoringv1.BatchResult{nil}})
	})
	try("fe nil", func() ([]byte, error) {
		return o.Marshal(&scoringv1.BatchResult{Errors: []*scoringv1.FieldError{nil}})
	})
	u := protojson.UnmarshalOptions{DiscardUnknown: true}
	for _, s := range []string{`null`, `{"items":[null]}`, `{"payload":{"a":1,"a":2}}`, `{"x":1,"x":2}`, `{"payload":{"a":"\ud800"}}`, `{"payload":{"a":"\ud83d\ude00"}}`} {
		var m scoringv1.ScoreBatchRequest
		err := u.Unmarshal([]byte(s), &m)
		fmt.Println(s, "=>", &m, err)
	}
}
