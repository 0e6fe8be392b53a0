package app_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
)

// referenceJSON returns the bytes the gateway's own marshaler writes for the answer body holds.
func referenceJSON(t *testing.T, body []byte) []byte {
	t.Helper()
	var ref runtime.Marshaler
	gateway.NewServeMux(gateway.WithCodec(func(base runtime.Marshaler) runtime.Marshaler { ref = base; return base }))
	var m verificationv1.IntelligenceServerResponse
	if err := protojson.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	out, err := ref.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServerStateReadsAreCached: the first read of a server fills the cache (its snapshot and latest
// change), the next ones are served from it, and every answer is byte for byte what the gateway's
// protojson marshaler writes, whether the cache holds the entry or had to evict it at once.
func TestServerStateReadsAreCached(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		maxBytes int64
		// entries is how many entries the cache holds after reading a (its snapshot and latest change).
		entries int
	}{
		{"room for everything", readcache.DefaultMaxBytes, 2},
		{"room for nothing", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reads := readcache.New(tc.maxBytes)
			s := startRegistryWith(t, publishThree, bootWithReadCache(reads))
			eventually(t, "the baseline sync", func() bool { return s.call(http.MethodGet, serverA, nil).Status == http.StatusOK })
			changeAAndC(s.reg)
			eventually(t, "the incremental sync", func() bool { return len(items(t, s.get("/v1/intelligence/changes"))) == 5 })

			before := reads.Len()
			first := s.call(http.MethodGet, serverA, nil)
			if got := reads.Len() - before; first.Status != http.StatusOK || got > tc.entries {
				t.Fatalf("first read: %d %s, %d new entries; want 200 and at most %d", first.Status, first.Body, got, tc.entries)
			}
			held, bytesHeld := reads.Len(), reads.Bytes()
			if bytesHeld > tc.maxBytes {
				t.Errorf("the cache holds %d bytes, over its budget of %d", bytesHeld, tc.maxBytes)
			}
			for range 3 {
				again := s.call(http.MethodGet, serverA, nil)
				if again.Status != http.StatusOK || !bytes.Equal(again.Body, first.Body) {
					t.Fatalf("read again: got %d %s, want the first answer %s", again.Status, again.Body, first.Body)
				}
			}
			if reads.Len() != held || reads.Bytes() != bytesHeld {
				t.Errorf("reading again changed the cache: %d entries of %d bytes, then %d of %d", held, bytesHeld, reads.Len(), reads.Bytes())
			}
			if tc.entries > 0 && held < tc.entries {
				t.Errorf("the cache holds %d entries after the first read, want %d (snapshot and latest change)", held, tc.entries)
			}
			for _, path := range []string{serverA, serverC, "/v1/intelligence/servers/io.example/b"} {
				r := s.call(http.MethodGet, path, nil)
				if want := referenceJSON(t, r.Body); r.Status != http.StatusOK || !bytes.Equal(r.Body, want) {
					t.Errorf("GET %s: got %d\n%s\nwant the gateway marshaler's\n%s", path, r.Status, r.Body, want)
				}
			}
			// The moving part of the answer is read each time: a new poll moves last_seen_at.
			lastSeen := first.Object(t)["last_seen_at"]
			changeA2(s.reg)
			eventually(t, "a's next version", func() bool { return s.get(serverA)["version"] == "1.2.0" })
			if now := s.get(serverA); now["last_seen_at"] == lastSeen || now["change_count"] == first.Object(t)["change_count"] {
				t.Errorf("after a new version: last_seen_at %v and change_count %v did not move", now["last_seen_at"], now["change_count"])
			}
		})
	}
}

// changeA2 publishes a 1.2.0 of a, which only bumps the version.
func changeA2(reg *registryfixture.Registry) {
	reg.Advance(time.Hour)
	a := registryfixture.Server("io.example/a", "1.2.0")
	a["remotes"] = []any{map[string]any{"type": "streamable-http", "url": "https://mcp.other.example/weather",
		"headers": []any{map[string]any{"name": "X-Tenant", "isRequired": true}}}}
	reg.Publish(a)
}
