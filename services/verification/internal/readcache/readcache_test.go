package readcache

import (
	"bytes"

	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
)

// gatewayMarshaler returns the gateway's own marshaler (the reference) and the codec wrapped around it.
func gatewayMarshaler(t testing.TB, c *Cache) (ref, codec runtime.Marshaler) {
	t.Helper()
	gateway.NewServeMux(gateway.WithCodec(func(base runtime.Marshaler) runtime.Marshaler {
		ref, codec = base, c.Codec(base)
		return codec
	}))
	if ref == nil {
		t.Fatal("the gateway did not call its codec hook")
	}
	return ref, codec
}

// awkward strings: escapes, HTML characters (protojson does not escape them), non-ASCII, empty.
var awkward = []string{"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "tab\tnew\nline\r\x01\x1f",
	"Grüße 天気 🌦", "\u2028\u2029", strings.Repeat("x", 300)}

func pick(r *rand.Rand) string { return awkward[r.IntN(len(awkward))] }

func stamp(r *rand.Rand) *timestamppb.Timestamp {
	if r.IntN(5) == 0 {
		return nil
	}
	nanos := []int32{0, 500_000_000, 120_000, 7, 999_999_999}[r.IntN(5)]
	return &timestamppb.Timestamp{Seconds: r.Int64N(253402300799), Nanos: nanos}
}

func inputs(r *rand.Rand) []*verificationv1.IntelligenceInput {
	out := make([]*verificationv1.IntelligenceInput, r.IntN(3))
	for i := range out {
		out[i] = &verificationv1.IntelligenceInput{Name: pick(r), Description: pick(r), IsRequired: r.IntN(2) == 0,
			IsSecret: r.IntN(2) == 0, Format: pick(r), Default: pick(r)}
	}
	return out
}

// template returns a random snapshot part of an answer, as intelServerTemplate builds them.
func template(t testing.TB, r *rand.Rand) *verificationv1.IntelligenceServerResponse {
	t.Helper()
	m := &verificationv1.IntelligenceServerResponse{
		Namespace: "io.example", Name: pick(r), FullName: pick(r), Version: pick(r), Status: "active",
		StatusMessage: pick(r), Title: pick(r), Description: pick(r), WebsiteUrl: pick(r),
		Packages: []*verificationv1.IntelligencePackage{}, Remotes: []*verificationv1.IntelligenceRemote{},
		IsLatest: r.IntN(2) == 0, PublishedAt: stamp(r), RegistryUpdatedAt: stamp(r), Registry: pick(r),
		SnapshotId: uuid.NewString(), ContentHash: strings.Repeat("ab", 32),
	}
	if r.IntN(3) > 0 {
		m.Repository = &verificationv1.IntelligenceRepository{Url: pick(r), Source: "github", Id: pick(r), Subfolder: pick(r)}
	}
	for range r.IntN(3) {
		m.Packages = append(m.Packages, &verificationv1.IntelligencePackage{RegistryType: "npm", Identifier: pick(r), Version: pick(r),
			FileSha256: pick(r), RuntimeHint: pick(r), Transport: &verificationv1.IntelligenceTransport{Type: "stdio", Url: pick(r), Headers: inputs(r)},
			EnvironmentVariables: inputs(r)})
	}
	for range r.IntN(3) {
		m.Remotes = append(m.Remotes, &verificationv1.IntelligenceRemote{Type: "sse", Url: pick(r), Headers: inputs(r)})
	}
	if r.IntN(6) > 0 {
		doc := map[string]any{"name": pick(r), "version": pick(r), "n": r.Float64() * 1e6, "tiny": 1e-7, "big": 1e21, "int": 42,
			"list": []any{pick(r), true, nil, 3.5}, "nested": map[string]any{"z": pick(r), "a": map[string]any{}}}
		s, err := structpb.NewStruct(doc)
		if err != nil {
			t.Fatal(err)
		}
		m.ServerJson = s
	}
	return m
}

func change(r *rand.Rand) *verificationv1.IntelligenceChange {
	return &verificationv1.IntelligenceChange{Id: uuid.NewString(), Namespace: "io.example", Name: pick(r), FromVersion: pick(r),
		ToVersion: pick(r), FromSnapshotId: uuid.NewString(), ToSnapshotId: uuid.NewString(), Field: pick(r), OldValue: pick(r),
		NewValue: pick(r), ChangeType: "remote_url_changed", Risk: "high", Summary: pick(r), DetectedAt: stamp(r)}
}

// TestCodecWritesWhatTheGatewayWrites builds answers the way GetServer does, from random templates and
// states, and compares the codec's bytes with the gateway marshaler's, twice (rendering, then rendered).
func TestCodecWritesWhatTheGatewayWrites(t *testing.T) {
	t.Parallel()
	c := New(DefaultMaxBytes)
	ref, codec := gatewayMarshaler(t, c)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		tmpl := template(t, r)
		id := uuid.MustParse(tmpl.SnapshotId)
		entry := c.AddServer(id, tmpl)
		st := State{FirstSeenAt: stamp(r), LastSeenAt: stamp(r), ChangeCount: r.Int32N(1000) - 10, HighRiskChangeCount: r.Int32()}
		switch r.IntN(3) {
		case 1: // a cached change, as GetServer passes it
			ch := change(r)
			st.LatestChange = c.AddChange(uuid.MustParse(ch.Id), ch).Message()
		case 2: // a change the cache does not hold
			st.LatestChange = change(r)
		}
		m := entry.Response(st)
		want, err := ref.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			got, err := codec.Marshal(m)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("answer %d, round %d: got %s (%v)\nwant %s", i, round, got, err, want)
			}
		}
		if _, hit := c.encodeServer(ref, m); !hit {
			t.Fatalf("answer %d: the codec did not use the cached entry", i)
		}
	}
}

// TestCodecLeavesOtherMessagesToTheGateway checks the answers the codec must not vouch for: built by
// hand, changed after Response, of an evicted entry, or with a timestamp protojson refuses.
func TestCodecLeavesOtherMessagesToTheGateway(t *testing.T) {
	t.Parallel()
	c := New(DefaultMaxBytes)
	ref, codec := gatewayMarshaler(t, c)
	r := rand.New(rand.NewPCG(3, 4))
	tmpl := template(t, r)
	tmpl.Title = "cached title"
	entry := c.AddServer(uuid.MustParse(tmpl.SnapshotId), tmpl)
	first := entry.Response(State{ChangeCount: 1})
	if _, err := codec.Marshal(first); err != nil { // renders the entry
		t.Fatal(err)
	}

	changed := entry.Response(State{ChangeCount: 1})
	changed.Title = "edited after Response"
	outOfRange := entry.Response(State{LastSeenAt: &timestamppb.Timestamp{Seconds: 253402300800}})
	for name, m := range map[string]*verificationv1.IntelligenceServerResponse{
		"field changed after Response": changed,
		"built by hand":                {SnapshotId: tmpl.SnapshotId, Title: tmpl.Title, ServerJson: tmpl.ServerJson},
		"unknown snapshot id":          {SnapshotId: uuid.NewString()},
		"malformed snapshot id":        {SnapshotId: "not-a-uuid"},
		"timestamp out of range":       outOfRange,
	} {
		want, wantErr := ref.Marshal(m)
		got, gotErr := codec.Marshal(m)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: got %s (%v), want %s (%v)", name, got, gotErr, want, wantErr)
		}
		if _, hit := c.encodeServer(ref, m); hit {
			t.Errorf("%s: the codec used the cached entry", name)
		}
	}
	if got, _ := codec.Marshal(changed); !bytes.Contains(got, []byte("edited after Response")) {
		t.Errorf("a changed answer was written from the cache: %s", got)
	}
	// Other messages pass through untouched.
	other := &verificationv1.IntelligenceChangesResponse{NextCursor: "x"}
	want, _ := ref.Marshal(other)
	if got, err := codec.Marshal(other); err != nil || !bytes.Equal(got, want) {
		t.Errorf("another message: got %s (%v), want %s", got, err, want)
	}
}

// TestCacheIsBoundedByBytes fills a cache past its budget: the oldest entries go, the newest stay,
// and an evicted entry's answers are still written correctly (by the gateway's marshaler).
func TestCacheIsBoundedByBytes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	var tmpls []*verificationv1.IntelligenceServerResponse
	var total int64
	for range 50 {
		tm := template(t, r)
		tmpls = append(tmpls, tm)
		total += estimate(tm)
	}
	budget := total / 5
	c := New(budget)
	ref, codec := gatewayMarshaler(t, c)
	var answers []*verificationv1.IntelligenceServerResponse
	for _, tm := range tmpls {
		answers = append(answers, c.AddServer(uuid.MustParse(tm.SnapshotId), tm).Response(State{ChangeCount: 3}))
		if c.Bytes() > budget {
			t.Fatalf("cache holds %d bytes, over its budget of %d", c.Bytes(), budget)
		}
	}
	if c.Len() == 0 || c.Len() >= len(tmpls) {
		t.Fatalf("cache holds %d of %d entries, want some but not all", c.Len(), len(tmpls))
	}
	if _, ok := c.Server(uuid.MustParse(tmpls[0].SnapshotId)); ok {
		t.Error("the oldest entry is still cached")
	}
	if _, ok := c.Server(uuid.MustParse(tmpls[len(tmpls)-1].SnapshotId)); !ok {
		t.Error("the newest entry was evicted")
	}
	for i, m := range answers {
		want, _ := ref.Marshal(m)
		if got, err := codec.Marshal(m); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("answer %d: got %s (%v), want %s", i, got, err, want)
		}
	}
}

// TestAddKeepsTheFirstEntry: two readers that missed together share the first entry stored.
func TestAddKeepsTheFirstEntry(t *testing.T) {
	t.Parallel()
	c := New(DefaultMaxBytes)
	r := rand.New(rand.NewPCG(7, 8))
	a, b := template(t, r), template(t, r)
	id := uuid.New()
	first, second := c.AddServer(id, a), c.AddServer(id, b)
	if first != second || second.tmpl != a {
		t.Error("the second AddServer replaced the first entry")
	}
	if c.Len() != 1 || c.Bytes() != estimate(a) {
		t.Errorf("got %d entries of %d bytes, want 1 of %d", c.Len(), c.Bytes(), estimate(a))
	}
}

// FuzzCodecMatchesGateway writes answers whose strings and times come from the fuzzer.
func FuzzCodecMatchesGateway(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, int64(1767225600), int32(0))
	}
	f.Add("\xff invalid utf-8", "x", int64(-62135596800), int32(1))
	f.Add("x", "\u00e9", int64(253402300799), int32(999_999_999))
	f.Fuzz(func(t *testing.T, a, b string, secs int64, nanos int32) {
		c := New(DefaultMaxBytes)
		ref, codec := gatewayMarshaler(t, c)
		sj, err := structpb.NewStruct(map[string]any{a: b, "k": []any{a, float64(secs)}})
		if err != nil {
			t.Skip() // structpb refuses invalid UTF-8 itself
		}
		ts := &timestamppb.Timestamp{Seconds: secs, Nanos: nanos}
		tmpl := &verificationv1.IntelligenceServerResponse{Namespace: a, Name: b, Title: a + b, SnapshotId: uuid.NewString(),
			PublishedAt: ts, ServerJson: sj, Packages: []*verificationv1.IntelligencePackage{}}
		m := c.AddServer(uuid.MustParse(tmpl.SnapshotId), tmpl).Response(State{FirstSeenAt: ts, LastSeenAt: ts})
		want, wantErr := ref.Marshal(m)
		got, gotErr := codec.Marshal(m)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("got %s (%v), want %s (%v)", got, gotErr, want, wantErr)
		}
	})
}

// TestAppendTimestamp pins the fractional forms protojson writes.
func TestAppendTimestamp(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()
	for _, tc := range []struct {
		nanos int32
		want  string
	}{
		{0, `"2026-01-02T03:04:05Z"`},
		{500_000_000, `"2026-01-02T03:04:05.500Z"`},
		{120_000, `"2026-01-02T03:04:05.000120Z"`},
		{7, `"2026-01-02T03:04:05.000000007Z"`},
	} {
		got, ok := appendTimestamp(nil, &timestamppb.Timestamp{Seconds: base, Nanos: tc.nanos})
		if !ok || string(got) != tc.want {
			t.Errorf("nanos %d: got %s (%v), want %s", tc.nanos, got, ok, tc.want)
		}
	}
	if _, ok := appendTimestamp(nil, &timestamppb.Timestamp{Seconds: 253402300800}); ok {
		t.Error("a timestamp after year 9999 was written")
	}
}

// BenchmarkMarshalServer is the answer of GET /v1/intelligence/servers/{namespace}/{name}.
func BenchmarkMarshalServer(b *testing.B) {
	c := New(DefaultMaxBytes)
	ref, codec := gatewayMarshaler(b, c)
	tmpl := template(b, rand.New(rand.NewPCG(9, 10)))
	m := c.AddServer(uuid.MustParse(tmpl.SnapshotId), tmpl).Response(State{FirstSeenAt: timestamppb.Now(), LastSeenAt: timestamppb.Now()})
	for name, mar := range map[string]runtime.Marshaler{"reference": ref, "codec": codec} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mar.Marshal(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
