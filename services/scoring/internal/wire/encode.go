package wire

import (
	"errors"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// errUnencodable is the panic of an append function that meets a value protojson refuses to write
// (invalid UTF-8, a Timestamp out of range); encode recovers it and the caller hands the whole
// message to the reference marshaler, which returns its own error. A panic keeps the append
// functions in the form b = appendX(b, m): an encoder struct with an error field had every append
// store through a pointer, and the GC write barriers on those stores cost a quarter of the batch
// encoding time in a CPU profile.
var errUnencodable = errors.New("wire: value protojson refuses to encode")

// encode appends the JSON of a hot message to b exactly as the reference path writes it:
// protojson.MarshalOptions{UseProtoNames: true, EmitDefaultValues: true} followed by json.Compact.
// That means fields in declaration order (protojson ranges fields in order.IndexNameFieldOrder, and
// every message here declares its fields in number order), scalars always written (0, "", false),
// repeated fields always written ([] when empty), unset message fields left out (EmitDefaultValues
// writes null only under EmitUnpopulated), and only the set member of a oneof. A nil message where a
// value is required (the top-level message, a list element, a oneof member) reads as an empty
// message, as protoreflect does, which the nil-safe generated getters give for free.
//
// ok is false when v is not a hot message or when protojson would refuse it; the caller then uses
// base.
func encode(b []byte, v any) (out []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != errUnencodable {
				panic(r)
			}
			out, ok = b, false
		}
	}()
	switch m := v.(type) {
	case *scoringv1.ScoreResult:
		return appendScoreResult(b, m), true
	case *scoringv1.ScoreBatchResponse:
		return appendScoreBatchResponse(b, m), true
	}
	return b, false
}

func appendScoreResult(b []byte, m *scoringv1.ScoreResult) []byte {
	b = stringField(b, `{"workflow":`, m.GetWorkflow())
	b = doubleField(b, `,"score":`, m.GetScore())
	b = stringField(b, `,"risk_level":`, m.GetRiskLevel())
	b = doubleField(b, `,"confidence":`, m.GetConfidence())
	b = stringField(b, `,"model_version":`, m.GetModelVersion())
	if x := m.GetExplanation(); x != nil {
		b = append(b, `,"explanation":{"top_factors":[`...)
		for i, f := range x.GetTopFactors() {
			if i > 0 {
				b = append(b, ',')
			}
			b = stringField(b, `{"feature":`, f.GetFeature())
			b = doubleField(b, `,"contribution":`, f.GetContribution())
			b = stringField(b, `,"direction":`, f.GetDirection())
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	if x := m.GetDetails(); x != nil {
		b = append(b, `,"details":`...)
		b = appendDetails(b, x)
	}
	if x := m.GetScoredAt(); x != nil {
		b = append(b, `,"scored_at":`...)
		b = appendTimestamp(b, x)
	}
	b = append(b, '}')
	return b
}

func appendDetails(b []byte, m *scoringv1.Details) []byte {
	b = stringField(b, `{"workflow":`, m.GetWorkflow())
	switch s := m.GetScoped().(type) {
	case *scoringv1.Details_Denial:
		b = append(b, `,"denial":`...)
		b = appendDenial(b, s.Denial)
	case *scoringv1.Details_PriorAuth:
		b = append(b, `,"prior_auth":`...)
		b = appendPriorAuth(b, s.PriorAuth)
	case *scoringv1.Details_Reimbursement:
		b = append(b, `,"reimbursement":`...)
		b = appendReimbursement(b, s.Reimbursement)
	}
	b = append(b, '}')
	return b
}

func appendDenial(b []byte, m *scoringv1.DenialDetails) []byte {
	b = doubleField(b, `{"denial_probability":`, m.GetDenialProbability())
	b = stringField(b, `,"operating_point":`, m.GetOperatingPoint())
	b = stringField(b, `,"distribution_profile":`, m.GetDistributionProfile())
	b = stringField(b, `,"routing_source":`, m.GetRoutingSource())
	b = stringField(b, `,"risk_tier":`, m.GetRiskTier())
	b = stringField(b, `,"calibration_method":`, m.GetCalibrationMethod())
	b = stringField(b, `,"calibration_version":`, m.GetCalibrationVersion())
	b = doubleField(b, `,"threshold":`, m.GetThreshold())
	b = stringField(b, `,"threshold_source":`, m.GetThresholdSource())
	b = append(b, `,"predicted_denial":`...)
	b = strconv.AppendBool(b, m.GetPredictedDenial())
	b = stringsField(b, `,"drift_flags":`, m.GetDriftFlags())
	b = append(b, '}')
	return b
}

func appendPriorAuth(b []byte, m *scoringv1.PriorAuthDetails) []byte {
	b = doubleField(b, `{"prior_auth_probability":`, m.GetPriorAuthProbability())
	b = stringField(b, `,"calibration_method":`, m.GetCalibrationMethod())
	b = stringField(b, `,"calibration_version":`, m.GetCalibrationVersion())
	if x := m.GetPayerSupport(); x != nil {
		b = stringField(b, `,"payer_support":{"support_level":`, x.GetSupportLevel())
		b = stringField(b, `,"note":`, x.GetNote())
		b = append(b, '}')
	}
	b = append(b, `,"policy_signals":[`...)
	for i, s := range m.GetPolicySignals() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPolicySignal(b, s)
	}
	b = stringsField(b, `],"drift_flags":`, m.GetDriftFlags())
	b = append(b, '}')
	return b
}

func appendPolicySignal(b []byte, m *scoringv1.PolicySignal) []byte {
	b = stringField(b, `{"change_event_id":`, m.GetChangeEventId())
	b = stringField(b, `,"change_type":`, m.GetChangeType())
	b = stringField(b, `,"organization":`, m.GetOrganization())
	b = stringField(b, `,"summary":`, m.GetSummary())
	b = stringsField(b, `,"matched_codes":`, m.GetMatchedCodes())
	b = stringField(b, `,"policy_url":`, m.GetPolicyUrl())
	if x := m.GetPublishedAt(); x != nil {
		b = append(b, `,"published_at":`...)
		b = appendTimestamp(b, x)
	}
	b = append(b, '}')
	return b
}

func appendReimbursement(b []byte, m *scoringv1.ReimbursementDetails) []byte {
	b = doubleField(b, `{"expected_allowed_amount":`, m.GetExpectedAllowedAmount())
	b = doubleField(b, `,"billed_amount":`, m.GetBilledAmount())
	b = doubleField(b, `,"reimbursement_ratio":`, m.GetReimbursementRatio())
	b = doubleField(b, `,"units":`, m.GetUnits())
	b = stringsField(b, `,"drift_flags":`, m.GetDriftFlags())
	b = append(b, '}')
	return b
}

func appendScoreBatchResponse(b []byte, m *scoringv1.ScoreBatchResponse) []byte {
	b = append(b, `{"results":[`...)
	for i, r := range m.GetResults() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendBatchResult(b, r)
	}
	b = append(b, ']')
	if s := m.GetSummary(); s != nil {
		b = intField(b, `,"summary":{"total":`, s.GetTotal())
		b = intField(b, `,"succeeded":`, s.GetSucceeded())
		b = intField(b, `,"failed":`, s.GetFailed())
		b = intField(b, `,"billable_calls":`, s.GetBillableCalls())
		b = append(b, '}')
	}
	b = append(b, '}')
	return b
}

func appendBatchResult(b []byte, m *scoringv1.BatchResult) []byte {
	b = intField(b, `{"index":`, m.GetIndex())
	b = stringField(b, `,"id":`, m.GetId())
	b = intField(b, `,"status":`, m.GetStatus())
	b = stringField(b, `,"request_id":`, m.GetRequestId())
	if x := m.GetResult(); x != nil {
		b = append(b, `,"result":`...)
		b = appendScoreResult(b, x)
	}
	b = stringField(b, `,"error":`, m.GetError())
	b = append(b, `,"errors":[`...)
	for i, fe := range m.GetErrors() {
		if i > 0 {
			b = append(b, ',')
		}
		b = stringField(b, `{"field":`, fe.GetField())
		b = stringField(b, `,"rule":`, fe.GetRule())
		b = stringField(b, `,"message":`, fe.GetMessage())
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	return b
}

// The field writers append one field: its key, written with the comma or brace before it and the
// colon after, then its value. One call per field keeps each message's writer a list of its fields in
// declaration order; the compiler inlines them, so they cost what the two appends cost.
func stringField(b []byte, key, v string) []byte { return appendString(append(b, key...), v) }

func doubleField(b []byte, key string, v float64) []byte { return appendDouble(append(b, key...), v) }

func intField(b []byte, key string, v int32) []byte {
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

func stringsField(b []byte, key string, v []string) []byte {
	return appendStrings(append(b, key...), v)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	b = append(b, ']')
	return b
}

const hexDigits = "0123456789abcdef"

// plain marks the bytes appendString copies without a second look: printable ASCII except '"' and
// '\\'. A table lookup instead of three comparisons per byte: strings were a third of the encoding
// time of a batch answer in a CPU profile, and the table took BenchmarkMarshalBatch100 down by a tenth.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as protojson's appendString (internal/encoding/json/encode.go) does: only '"', '\\'
// and the C0 controls are escaped (\b \f \n \r \t by name, the rest as \u00xx in lower-case hex);
// '<', '>', '&', U+2028 and U+2029 stay literal, and json.Compact (which escapes nothing) keeps them so.
// Invalid UTF-8 makes protojson fail, so it panics with errUnencodable.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				panic(errUnencodable)
			}
			i += n
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	b = append(b, '"')
	return b
}

// appendDouble writes n as protojson's appendFloat with bitSize 64: NaN and the infinities as the strings
// "NaN", "Infinity" and "-Infinity"; otherwise the shortest round-trip form, in exponent form only when
// |n| < 1e-6 or |n| >= 1e21 (the encoding/json rule), with a one-digit negative exponent unpadded
// (1e-07 becomes 1e-7). Negative zero stays "-0".
func appendDouble(b []byte, n float64) []byte {
	switch {
	case math.IsNaN(n):
		return append(b, `"NaN"`...)
	case math.IsInf(n, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, n, format, -1, 64)
	if format == 'e' {
		k := len(b)
		if k >= 4 && b[k-4] == 'e' && b[k-3] == '-' && b[k-2] == '0' {
			b[k-2] = b[k-1]
			b = b[:k-1]
		}
	}
	return b
}

// The range protojson accepts for google.protobuf.Timestamp (encoding/protojson/well_known_types.go):
// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300799
	maxTimestampNanos   = 999999999
)

// appendTimestamp writes t as protojson does: RFC 3339 in UTC with a Z, and 0, 3, 6 or 9 fractional digits
// (the fewest that keep every non-zero digit). A value out of range makes protojson fail, so it panics
// with errUnencodable.
func appendTimestamp(b []byte, t *timestamppb.Timestamp) []byte {
	secs, nanos := t.GetSeconds(), t.GetNanos()
	if secs < minTimestampSeconds || secs > maxTimestampSeconds || nanos < 0 || nanos > maxTimestampNanos {
		panic(errUnencodable)
	}
	u := time.Unix(secs, 0).UTC()
	year, month, day := u.Date()
	hour, minute, second := u.Clock()
	b = append(b, '"')
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	if nanos != 0 {
		b = append(b, '.')
		switch {
		case nanos%1e6 == 0:
			b = appendDigits(b, int(nanos/1e6), 3)
		case nanos%1e3 == 0:
			b = appendDigits(b, int(nanos/1e3), 6)
		default:
			b = appendDigits(b, int(nanos), 9)
		}
	}
	b = append(b, 'Z', '"')
	return b
}

// appendDigits appends the non-negative n in decimal, zero-padded to width digits.
func appendDigits(b []byte, n, width int) []byte {
	var buf [9]byte
	for i := width - 1; i >= 0; i-- {
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, buf[:width]...)
}
