package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

var hotRequests = []func() proto.Message{
	func() proto.Message { return &scoringv1.ScoreRequest{} },
	func() proto.Message { return &scoringv1.ScoreBatchRequest{} },
}

// checkDecode reads body with the reference decoder and with the codec, twice each from one
// stream as a runtime.Decoder allows, and wants the same messages or the same errors.
func checkDecode(t *testing.T, ref, codec runtime.Marshaler, body []byte, newMsg func() proto.Message) {
	t.Helper()
	refDec := ref.NewDecoder(bytes.NewReader(body))
	codecDec := codec.NewDecoder(bytes.NewReader(body))
	for i := range 2 {
		want, got := newMsg(), newMsg()
		wantErr := refDec.Decode(want)
		gotErr := codecDec.Decode(got)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Fatalf("Decode #%d of %T from %q: got error %v, want %v", i+1, want, body, gotErr, wantErr)
		}
		if errors.Is(wantErr, io.EOF) != errors.Is(gotErr, io.EOF) {
			t.Fatalf("Decode #%d of %T from %q: got error %#v, want %#v", i+1, want, body, gotErr, wantErr)
		}
		if wantErr == nil && !proto.Equal(got, want) {
			t.Fatalf("Decode #%d of %T from %q:\n got %v\nwant %v", i+1, want, body, got, want)
		}
	}
	want, got := newMsg(), newMsg()
	wantErr := ref.Unmarshal(body, want)
	gotErr := codec.Unmarshal(body, got)
	if (wantErr == nil) != (gotErr == nil) || (wantErr == nil && !proto.Equal(got, want)) {
		t.Fatalf("Unmarshal of %T from %q: got %v, %v; want %v, %v", want, body, got, gotErr, want, wantErr)
	}
}

func TestDecodeMatchesReferenceOnCraftedBodies(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	for _, body := range []string{
		``, ` `, " \t\r\n", `{}`, ` {} `, `{}{}`, `{} garbage`, `{}{"workflow":"b"}`, `{`, `{"workflow"`, `[]`, `null`, `"x"`, `1`,
		`{"workflow":"healthcare.denial","payload":{"a":1},"options":{"model_version":"v1","allow_fallback":false}}`,
		`{"workflow":"w","options":{"modelVersion":"v","allowFallback":true,"operatingPoint":"p","distributionProfile":"d"}}`,
		`{"options":{"allow_fallback":null}}`, `{"options":{"allow_fallback":"true"}}`, `{"options":{"allow_fallback":1}}`,
		`{"options":{"model_version":"a","modelVersion":"b"}}`, `{"options":null}`, `{"options":[]}`, `{"options":{}}`,
		`{"workflow":null}`, `{"workflow":"a","workflow":null}`, `{"workflow":1}`, `{"workflow":true}`, `{"workflow":{}}`,
		`{"payload":null}`, `{"payload":{}}`, `{"payload":[]}`, `{"payload":"x"}`, `{"payload":{"a":1,"a":2}}`,
		`{"payload":{"a":{"b":1,"b":2}}}`, `{"payload":{"a":[1,null,{},[],"s",true,false]}}`,
		`{"payload":{"n":-0,"e":1e400,"x":1}}`, `{"payload":{"n":-0}}`, `{"payload":{"n":12345678901234567890}}`,
		`{"payload":{"n":1.5e-7,"m":1E+3,"o":0.1}}`, `{"payload":{"n":01}}`, `{"payload":{"n":1.}}`, `{"payload":{"n":.5}}`,
		`{"payload":{"n":-}}`, `{"payload":{"n":+1}}`, `{"payload":{"n":NaN}}`, `{"payload":{"n":"NaN"}}`,
		`{"payload":{"s":"\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r\u0000"}}`, `{"payload":{"s":"\ud800"}}`, `{"payload":{"s":"\ud800\u0041"}}`,
		`{"payload":{"s":"\udc00\ud800"}}`, `{"payload":{"s":"\uD83D\uDE00"}}`, `{"payload":{"s":"\x"}}`, `{"payload":{"s":"\u12"}}`,
		"{\"payload\":{\"s\":\"\xff\"}}", "{\"payload\":{\"s\":\"a\x01\"}}", "{\"payload\":{\"s\":\"\\n\xc3\"}}", "{\"payload\":{\"\xff\":1}}",
		`{"payload":{"work\u0066low":1}}`, `{"work\u0066low":"w"}`, `{"Workflow":"w"}`, `{"@type":"x"}`, `{"[scoring.v1.x]":1}`,
		`{"[google.api.http]":{}}`, `{"options":{"[google.api.http]":1}}`, `{"payload":{"[google.api.http]":1}}`,
		`{"unknown":{"a":1,"a":2},"unknown":[1,{"x":null}]}`, "{\"unknown\":\"\xff\"}", `{"unknown":1e400}`, `{"unknown":01}`,
		`{"unknown":tru}`, `{"unknown":nul}`, `{"workflow":"w",}`, `{,}`, `{"workflow":"w" "payload":{}}`, `{"workflow" : "w" }`,
		"{\v}", "{\u00a0}", `{"items":[]}`, `{"items":null}`, `{"items":[null]}`, `{"items":[{}]}`, `{"items":{}}`, `{"items":[1]}`,
		`{"items":[{"id":"1","workflow":"w","payload":{"a":[{"b":[]}]},"options":{"allowFallback":false}},{"id":"2"}]}`,
		`{"items":[{"id":"1","id":"2"}]}`, `{"items":[],"items":[]}`, `{"items":[{"payload":{},"payload":null}]}`,
		strings.Repeat(`{"payload":`, 1) + `{"a":` + strings.Repeat(`[`, 70) + strings.Repeat(`]`, 70) + `}}`,
		`{"unknown":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		for _, newMsg := range hotRequests {
			checkDecode(t, ref, codec, []byte(body), newMsg)
		}
	}
}

// TestDecodeReadsCommonBodiesByHand guards against a reader that quietly hands everything to the
// reference decoder: the equivalence tests would still pass, the benchmark would not.
func TestDecodeReadsCommonBodiesByHand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		msg  proto.Message
	}{
		{string(sampleBatchBody()), &scoringv1.ScoreBatchRequest{}},
		{`{"workflow":"healthcare.denial","payload":{"cpt_code":"99214","billed_amount":185.0,"units":1,"tags":["a",null,true]},` +
			`"options":{"modelVersion":"v","allow_fallback":false},"extra":{"x":[1,2]}}`, &scoringv1.ScoreRequest{}},
		{`{"payload":{"note":"caf\u00e9 \"quoted\" 😀"}}` + "\n", &scoringv1.ScoreRequest{}},
	} {
		if _, err := decodeRequest(tc.body, tc.msg); err != nil {
			t.Errorf("decodeRequest(%q): got %v, want it read by hand", tc.body, err)
		}
	}
}

func TestDecodeDelegatesOtherValues(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	body := `{"a":1,"b":"x"}`
	var got, want *structpb.Struct // the legacy routes decode into &protoReq.Payload
	if err := codec.NewDecoder(strings.NewReader(body)).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if err := ref.NewDecoder(strings.NewReader(body)).Decode(&want); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("Decode(**Struct): got %v, want %v", got, want)
	}
	// A stream that base started reading stays with base, which has buffered past the first value.
	dec := codec.NewDecoder(strings.NewReader(`{"a":1} {"workflow":"w"}`))
	var first structpb.Struct
	var second scoringv1.ScoreRequest
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&second); err != nil || second.GetWorkflow() != "w" {
		t.Errorf("second Decode: got %v, %v; want workflow w", &second, err)
	}
}

// failingReader returns its data and then err, as http.MaxBytesReader does past its limit.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestDecodeKeepsReadErrors(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	tooLarge := errors.New("http: request body too large")
	for _, body := range []string{`{"workflow":"w"} `, `{"workflow":"w`, ``} {
		want, got := &scoringv1.ScoreRequest{}, &scoringv1.ScoreRequest{}
		wantErr := ref.NewDecoder(&failingReader{[]byte(body), tooLarge}).Decode(want)
		gotErr := codec.NewDecoder(&failingReader{[]byte(body), tooLarge}).Decode(got)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !proto.Equal(got, want) {
			t.Errorf("Decode(%q then %v): got %v, %v; want %v, %v", body, tooLarge, got, gotErr, want, wantErr)
		}
	}
}

// jsonGen writes request bodies that are mostly right and often subtly wrong.
type jsonGen struct {
	r *rand.Rand
	b strings.Builder
}

var (
	requestNames = []string{"workflow", "payload", "options", "items", "id", "unknown", "Workflow", "work\\u0066low",
		"[google.api.http]", "[x]"}
	optionNames = []string{"model_version", "modelVersion", "allow_fallback", "allowFallback", "operating_point",
		"operatingPoint", "distribution_profile", "distributionProfile", "other", "[google.api.http]"}
	payloadNames = []string{"cpt_code", "billed_amount", "units", "a", "", "é", "\\u00e9", "x\\ny"}
	numberTexts  = []string{"0", "-0", "1", "-1", "185.0", "1.5e3", "1E-7", "2e+5", "12345678901234567890",
		"1e400", "-1e400", "5e-324", "1e-400", "0.1", "01", "1.", ".5", "-", "+1", "1e", "0x10", "Infinity"}
	stringTexts = []string{"", "healthcare.denial", "a b", "\\n\\t\\\"\\\\\\/", "\\u00e9", "\\ud83d\\ude00", "\\ud800",
		"\\udc00", "\\ud800\\u0041", "\\u0000", "\\x", "\\u12G4", "é😀", "\xff", "\xc3", "\x01", "\t", "\u2028", "<&>"}
)

func (g *jsonGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

func (g *jsonGen) space() {
	if g.r.IntN(4) == 0 {
		g.b.WriteString([]string{" ", "\n", "\t", "\r\n  ", "\v", "\u00a0"}[g.r.IntN(6)*g.r.IntN(2)])
	}
}

func (g *jsonGen) str(s string) {
	g.b.WriteByte('"')
	g.b.WriteString(s)
	g.b.WriteByte('"')
}

func (g *jsonGen) value(depth int) {
	g.space()
	switch k := g.r.IntN(8); {
	case k == 0:
		g.b.WriteString(g.pick([]string{"null", "true", "false", "nul", "True"}))
	case k <= 2:
		g.b.WriteString(g.pick(numberTexts))
	case k <= 4 || depth > 3:
		g.str(g.pick(stringTexts))
	case k == 5:
		g.b.WriteByte('[')
		for i := range g.r.IntN(4) {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.value(depth + 1)
		}
		g.b.WriteByte(']')
	default:
		g.object(payloadNames, depth+1, func(string) { g.value(depth + 1) })
	}
	g.space()
}

func (g *jsonGen) object(names []string, depth int, member func(name string)) {
	g.b.WriteByte('{')
	for i := range g.r.IntN(6) {
		if i > 0 {
			g.b.WriteByte(',')
		}
		g.space()
		name := g.pick(names)
		g.str(name)
		g.space()
		g.b.WriteByte(':')
		member(name)
	}
	g.space()
	g.b.WriteByte('}')
}

// request writes a ScoreRequest, BatchItem or ScoreBatchRequest body, with the right value type for
// a known field most of the time.
func (g *jsonGen) request(depth int) {
	g.object(requestNames, depth, func(name string) {
		g.space()
		if g.r.IntN(8) == 0 {
			g.value(depth + 1)
			return
		}
		switch name {
		case "workflow", "id":
			g.str(g.pick(stringTexts))
		case "payload":
			g.object(payloadNames, depth+1, func(string) { g.value(depth + 1) })
		case "options":
			g.object(optionNames, depth+1, func(name string) {
				if strings.HasPrefix(name, "allow") && g.r.IntN(4) > 0 {
					g.b.WriteString(g.pick([]string{"true", "false", "null"}))
					return
				}
				g.value(depth + 1)
			})
		case "items":
			g.b.WriteByte('[')
			for i := range g.r.IntN(3) {
				if i > 0 {
					g.b.WriteByte(',')
				}
				g.request(depth + 1)
			}
			g.b.WriteByte(']')
		default:
			g.value(depth + 1)
		}
		g.space()
	})
}

func (g *jsonGen) body() []byte {
	g.b.Reset()
	g.space()
	g.request(0)
	switch g.r.IntN(10) {
	case 0:
		g.b.WriteString(g.pick([]string{" ", "}", "garbage", `{"workflow":"second"}`, "\n{}"}))
	case 1:
		s := g.b.String()
		return []byte(s[:g.r.IntN(len(s)+1)])
	case 2:
		b := []byte(g.b.String())
		b[g.r.IntN(len(b))] = byte(g.r.IntN(256))
		return b
	}
	return []byte(g.b.String())
}

func TestDecodeMatchesReferenceOnRandomBodies(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	g := &jsonGen{r: rand.New(rand.NewPCG(3, 4))}
	byHand := 0
	const n = 20000
	for range n {
		body := g.body()
		for _, newMsg := range hotRequests {
			checkDecode(t, ref, codec, body, newMsg)
			if _, err := decodeRequest(string(body), newMsg()); err == nil {
				byHand++
			}
		}
	}
	// About a fifth of the generated bodies are valid for both messages; all of them are read by hand.
	if byHand < n/10 {
		t.Errorf("read %d of %d bodies by hand; the generator or the reader lost its way", byHand, 2*n)
	}
	t.Logf("read %d of %d bodies by hand", byHand, 2*n)
}

// FuzzScoreRequestDecode reads the fuzzed body as both hot request messages with the codec and with
// the reference decoder, and wants the same messages or the same errors.
func FuzzScoreRequestDecode(f *testing.F) {
	for _, seed := range []string{
		``, `{}`, `{"workflow":"healthcare.denial","payload":{"cpt_code":"99214","billed_amount":185.0},"options":{"allow_fallback":true}}`,
		`{"items":[{"id":"1","workflow":"w","payload":{"a":[1,{"b":null}]},"options":{"modelVersion":"v"}}]}`,
		`{"payload":{"s":"\u00e9\ud83d\ude00\n","n":-0,"big":12345678901234567890,"e":1e400}}`,
		`{"payload":{"a":1,"a":2}}`, `{"workflow":"a","workflow":null}`, `{"unknown":[{"x":1,"x":2}]} trailing`,
		"{\"payload\":{\"s\":\"\xff\"}}", `{"items":[null]}`, `{"options":{"allow_fallback":"true"}}`, `{"[google.api.http]":{}}`,
	} {
		f.Add([]byte(seed))
	}
	g := &jsonGen{r: rand.New(rand.NewPCG(5, 6))}
	for range 20 {
		f.Add(g.body())
	}
	ref := reference(f)
	codec := New(ref)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, newMsg := range hotRequests {
			checkDecode(t, ref, codec, body, newMsg)
		}
	})
}

// TestConcurrentDecodesKeepTheirOwnMessages: decoders running at once share the pool of member
// stacks; every message read must still equal the reference's once all of them are done, so no
// stack is handed out while in use, and clearing one touches no message.
func TestConcurrentDecodesKeepTheirOwnMessages(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	codec := New(ref)
	const workers, each = 8, 300
	bodies := make([][][]byte, workers)
	for w := range bodies {
		g := &jsonGen{r: rand.New(rand.NewPCG(7, uint64(w)))}
		for range each {
			bodies[w] = append(bodies[w], g.body())
		}
	}
	got := make([][]*scoringv1.ScoreRequest, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, body := range bodies[w] {
				m := &scoringv1.ScoreRequest{}
				if codec.Unmarshal(body, m) != nil {
					m = nil
				}
				got[w] = append(got[w], m)
			}
		})
	}
	wg.Wait()
	read := 0
	for w := range workers {
		for i, body := range bodies[w] {
			want := &scoringv1.ScoreRequest{}
			if ref.Unmarshal(body, want) != nil {
				continue
			}
			read++
			if !proto.Equal(got[w][i], want) {
				t.Fatalf("worker %d, body %q:\n got %v\nwant %v", w, body, got[w][i], want)
			}
		}
	}
	if read < workers*each/10 {
		t.Errorf("only %d of %d bodies were valid; the generator lost its way", read, workers*each)
	}
}
