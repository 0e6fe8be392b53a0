package registryclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func TestDecodePageRefusesWhatIsNotAListing(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not JSON":              `{"servers": [`,
		"an array":              `[]`,
		"no servers":            `{"metadata": {}}`,
		"servers not an array":  `{"servers": {"a": 1}}`,
		"cursor of wrong type":  `{"servers": [], "metadata": {"nextCursor": 5}}`,
		"count contradicts":     `{"servers": [], "metadata": {"count": 3}}`,
		"trailing garbage":      `{"servers": []} x`,
		"html error page":       `<html>oops</html>`,
		"servers of wrong type": `{"servers": "all"}`,
	} {
		if _, err := decodePage([]byte(body)); !errors.Is(err, ErrBadPage) {
			t.Errorf("%s: got %v, want ErrBadPage", name, err)
		}
	}
}

func TestDecodePageSkipsInvalidItems(t *testing.T) {
	t.Parallel()
	body := `{"servers": [
		{"server": {"name": "io.example/ok", "version": "1.0.0"},
		 "_meta": {"io.modelcontextprotocol.registry/official": {"status": "deprecated", "statusMessage": "old",
		   "isLatest": false, "publishedAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-02T00:00:00Z"}}},
		{"server": {"name": "io.example/plain", "version": "2"}},
		"not an object",
		{"_meta": {}},
		{"server": {"name": "no-slash", "version": "1"}},
		{"server": {"name": "io.example/x", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"status": "retired"}}},
		{"server": {"name": "io.example/y", "version": "1"}, "_meta": {"io.modelcontextprotocol.registry/official": {"updatedAt": "yesterday"}}},
		{"server": null}
	], "metadata": {"nextCursor": "next", "count": 8}}`
	page, err := decodePage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Observations) != 2 || len(page.Skipped) != 6 || page.NextCursor != "next" {
		t.Fatalf("got %d observations, %d skipped, cursor %q; want 2, 6, next", len(page.Observations), len(page.Skipped), page.NextCursor)
	}
	ok := page.Observations[0]
	if ok.Status != "deprecated" || ok.StatusMessage != "old" || ok.IsLatest || !ok.UpdatedAt.Equal(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("got %+v, want the official metadata", ok)
	}
	// Without official metadata an entry is active and latest.
	if plain := page.Observations[1]; plain.Status != intelligence.LifecycleActive || !plain.IsLatest || !plain.UpdatedAt.IsZero() {
		t.Errorf("got %+v, want active and latest", plain)
	}
	for i, sk := range page.Skipped {
		if sk.Reason == "" || sk.Index < 2 {
			t.Errorf("skipped %d: got %+v, want its index and a reason", i, sk)
		}
	}
}

func TestListServersQueriesTheOfficialAPIThroughTheSSRFGuard(t *testing.T) {
	t.Parallel()
	reg := registryfixture.New(t)
	for _, n := range []string{"io.example/a", "io.example/b", "io.example/c"} {
		reg.Publish(registryfixture.Server(n, "1.0.0"))
	}
	c := New(Options{AllowPrivate: loopback, MaxAttempts: 1})
	ctx := context.Background()
	since := time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC)
	page, err := c.ListServers(ctx, reg.URL, intelligence.ListQuery{Limit: 2, UpdatedSince: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Observations) != 2 || page.NextCursor == "" {
		t.Fatalf("got %d observations and cursor %q, want 2 and a cursor", len(page.Observations), page.NextCursor)
	}
	q := reg.Requests()[0]
	if q.Get("limit") != "2" || q.Get("updated_since") != "2025-06-01T12:00:00.000000005Z" || q.Has("cursor") {
		t.Errorf("got query %v", q)
	}
	page, err = c.ListServers(ctx, reg.URL, intelligence.ListQuery{Limit: 2, Cursor: page.NextCursor})
	if err != nil || len(page.Observations) != 1 || page.NextCursor != "" || page.Observations[0].Server.Key.Name != "c" {
		t.Fatalf("second page: got %+v, %v; want c alone, last page", page, err)
	}

	// Without the operator's exception the loopback registry is refused before any request.
	guarded := New(Options{MaxAttempts: 1})
	_, err = guarded.ListServers(ctx, reg.URL, intelligence.ListQuery{})
	var se *safehttp.Error
	if !errors.As(err, &se) || se.Kind != safehttp.KindBlockedAddress {
		t.Errorf("got %v, want a blocked address", err)
	}
	if n := len(reg.Requests()); n != 2 {
		t.Errorf("got %d requests, want the guarded one never sent", n)
	}
}

func TestListServersRefusesNonJSONAnswers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>maintenance</html>"))
	}))
	defer srv.Close()
	c := New(Options{AllowPrivate: loopback, MaxAttempts: 1})
	_, err := c.ListServers(context.Background(), srv.URL+"/prefix", intelligence.ListQuery{})
	var se *safehttp.Error
	if !errors.As(err, &se) || se.Kind != safehttp.KindMIME {
		t.Errorf("got %v, want a media type refusal", err)
	}
}

func TestParseBaseURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://registry.modelcontextprotocol.io": "https://registry.modelcontextprotocol.io",
		" https://mirror.example/mcp/ ":            "https://mirror.example/mcp",
		"http://10.0.0.5:8080":                     "http://10.0.0.5:8080",
		"ftp://registry.example":                   "",
		"registry.example":                         "",
		"https://user:pw@registry.example":         "",
		"https://registry.example/?token=x":        "",
		"https://registry.example/#frag":           "",
	} {
		got, err := ParseBaseURL(raw)
		if want == "" && err == nil {
			t.Errorf("%q: got %q, want an error", raw, got)
		}
		if want != "" && (err != nil || got != want) {
			t.Errorf("%q: got %q, %v; want %q", raw, got, err, want)
		}
	}
}
