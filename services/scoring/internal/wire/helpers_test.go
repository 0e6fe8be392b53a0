package wire

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// reference is the marshaler the service serves JSON with (pkg/gateway's protojson + json.Compact),
// taken from a real gateway mux so that the tests compare against production, not a copy of it.
func reference(t testing.TB) runtime.Marshaler {
	t.Helper()
	req := httptest.NewRequest("POST", "/v1/score", nil)
	_, out := runtime.MarshalerForRequest(gateway.NewServeMux(), req)
	if out == nil {
		t.Fatal("gateway mux has no JSON marshaler")
	}
	return out
}

// sampleResult is a realistic denial answer: five factors, two drift flags, a timestamp with
// microseconds.
func sampleResult() *scoringv1.ScoreResult {
	factors := make([]*scoringv1.Factor, 5)
	for i := range factors {
		factors[i] = &scoringv1.Factor{
			Feature:      fmt.Sprintf("cpt family: imaging %d", i),
			Contribution: 0.4173625 / float64(i+1),
			Direction:    "increases_risk",
		}
	}
	return &scoringv1.ScoreResult{
		Workflow:     "healthcare.denial",
		Score:        0.73125,
		RiskLevel:    "high",
		Confidence:   0.8812,
		ModelVersion: "denial-2026.10.1",
		Explanation:  &scoringv1.Explanation{TopFactors: factors},
		Details: &scoringv1.Details{Workflow: "healthcare.denial", Scoped: &scoringv1.Details_Denial{Denial: &scoringv1.DenialDetails{
			DenialProbability:   0.73125,
			OperatingPoint:      "balanced",
			DistributionProfile: "commercial",
			RoutingSource:       "auto_detected",
			RiskTier:            "high",
			CalibrationMethod:   "isotonic",
			CalibrationVersion:  "2026-09-30",
			Threshold:           0.42,
			ThresholdSource:     "profile_table",
			PredictedDenial:     true,
			DriftFlags:          []string{"payer_mix_shift", "cpt_unseen"},
		}}},
		ScoredAt: &timestamppb.Timestamp{Seconds: 1790000000, Nanos: 123456000},
	}
}

// sampleBatch is a 100-item batch answer: 95 scored items and 5 validation failures.
func sampleBatch() *scoringv1.ScoreBatchResponse {
	resp := &scoringv1.ScoreBatchResponse{Summary: &scoringv1.BatchSummary{Total: 100, Succeeded: 95, Failed: 5, BillableCalls: 95}}
	for i := range 100 {
		r := &scoringv1.BatchResult{Index: int32(i), Id: fmt.Sprintf("item-%03d", i), Status: 200, RequestId: fmt.Sprintf("req_01J9Z%021d", i)}
		if i%20 == 7 {
			r.Status = 422
			r.Error = "payload failed validation"
			r.Errors = []*scoringv1.FieldError{{Field: "cpt_code", Rule: "pattern", Message: "cpt_code: must be 5 characters"}}
		} else {
			r.Result = sampleResult()
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// sampleBatchBody is a 100-item batch request with flat claim payloads like the workflow examples.
func sampleBatchBody() []byte {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 100 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"item-%03d","workflow":"healthcare.denial","payload":{"external_claim_id":"CLM-2025-%06d",`+
			`"service_date":"2025-03-14","provider_id":%d,"payer_id":7001,"cpt_code":"99214","icd10_code":"E11.9",`+
			`"billed_amount":%d.5,"units":1,"place_of_service":"11","network_status":"in_network","data_source":"ehr_export"},`+
			`"options":{"operating_point":"balanced","allow_fallback":true}}`, i, i, 1000+i, 100+i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// gen makes random values of the hot messages, aiming at what protojson formats with care.
type gen struct{ r *rand.Rand }

var awkwardStrings = []string{
	"", "a", `"quoted"`, `back\slash`, "<script>&amp;</script>", "\u2028\u2029", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
	"é ü 中文 😀", "\ufffd", "\xff", "a\xc3", "\xed\xa0\x80", "/", "\u00e9\u0301",
}

func (g gen) string() string {
	switch g.r.IntN(4) {
	case 0:
		return awkwardStrings[g.r.IntN(len(awkwardStrings))]
	case 1:
		return strings.Repeat("x", g.r.IntN(40))
	}
	var b strings.Builder
	for range g.r.IntN(12) {
		switch g.r.IntN(6) {
		case 0:
			b.WriteByte(byte(g.r.IntN(0x20)))
		case 1:
			b.WriteByte(`"\<>&/`[g.r.IntN(6)])
		case 2:
			b.WriteRune(rune(0x80 + g.r.IntN(0x10FFFF-0x80)))
		case 3:
			if g.r.IntN(20) == 0 {
				b.WriteByte(byte(0x80 + g.r.IntN(0x80))) // invalid UTF-8 now and then
			}
		default:
			b.WriteByte(byte(0x20 + g.r.IntN(0x5f)))
		}
	}
	return b.String()
}

var awkwardDoubles = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, 1e-6, 1e-7, 9.999999e-7, 1e20, 1e21, 9.99999999999999e20, 1e-300,
	5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1),
	123456789012345678, 0.1 + 0.2, 1.0 / 3, -2.5e-8, 3e100,
}

func (g gen) double() float64 {
	switch g.r.IntN(4) {
	case 0:
		return awkwardDoubles[g.r.IntN(len(awkwardDoubles))]
	case 1:
		return math.Float64frombits(g.r.Uint64())
	case 2:
		return (g.r.Float64() - 0.5) * math.Pow(10, float64(g.r.IntN(60)-30))
	}
	return g.r.Float64()
}

func (g gen) timestamp() *timestamppb.Timestamp {
	secs := minTimestampSeconds + g.r.Int64N(maxTimestampSeconds-minTimestampSeconds+1)
	var nanos int32
	switch g.r.IntN(5) {
	case 0:
	case 1:
		nanos = g.r.Int32N(1000) * 1e6
	case 2:
		nanos = g.r.Int32N(1e6) * 1e3
	case 3:
		nanos = g.r.Int32N(1e9)
	default:
		if g.r.IntN(10) == 0 { // out of range: protojson refuses these
			return &timestamppb.Timestamp{Seconds: secs * 100, Nanos: -1 + 1e9*g.r.Int32N(2)}
		}
		secs = []int64{minTimestampSeconds, maxTimestampSeconds, 0, -1}[g.r.IntN(4)]
		nanos = []int32{0, 1, 999999999, 1000000, 1000}[g.r.IntN(5)]
	}
	return &timestamppb.Timestamp{Seconds: secs, Nanos: nanos}
}

// fill sets every field of m through protoreflect, so that a field added to the proto later is
// generated too and the byte comparison fails until the codec writes it.
func (g gen) fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			continue
		}
		g.set(m, fd, depth)
	}
	oneofs := m.Descriptor().Oneofs()
	for i := range oneofs.Len() {
		od := oneofs.Get(i)
		if od.IsSynthetic() {
			continue
		}
		if k := g.r.IntN(od.Fields().Len() + 1); k < od.Fields().Len() {
			g.set(m, od.Fields().Get(k), depth)
		}
	}
}

func (g gen) set(m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) {
	switch {
	case fd.IsList():
		list := m.Mutable(fd).List()
		for range g.r.IntN(4) {
			if fd.Kind() == protoreflect.MessageKind {
				el := list.NewElement()
				g.fillMessage(el.Message(), depth+1)
				list.Append(el)
			} else {
				list.Append(g.scalar(fd))
			}
		}
	case fd.Kind() == protoreflect.MessageKind:
		// Unset now and then, but always set on the way down so every message type appears.
		if depth > 0 && g.r.IntN(5) == 0 {
			return
		}
		v := m.NewField(fd)
		g.fillMessage(v.Message(), depth+1)
		m.Set(fd, v)
	default:
		if g.r.IntN(6) > 0 { // leave the zero value a sixth of the time
			m.Set(fd, g.scalar(fd))
		}
	}
}

func (g gen) fillMessage(m protoreflect.Message, depth int) {
	if m.Descriptor().FullName() == "google.protobuf.Timestamp" {
		ts := g.timestamp()
		m.Set(m.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(ts.Seconds))
		m.Set(m.Descriptor().Fields().ByName("nanos"), protoreflect.ValueOfInt32(ts.Nanos))
		return
	}
	g.fill(m, depth)
}

func (g gen) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(g.string())
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(g.double())
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(g.r.IntN(2) == 0)
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32([]int32{0, 1, -1, 200, 422, math.MaxInt32, math.MinInt32, g.r.Int32()}[g.r.IntN(8)])
	}
	panic(fmt.Sprintf("gen: no generator for %v (%v): extend the codec and this generator", fd.FullName(), fd.Kind()))
}
