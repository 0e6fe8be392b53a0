package audit

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// TestEngineListing: both reports carry the listing their surface hashes, which a later audit can
// compare with (a watch run), and which never reaches the report's JSON.
func TestEngineListing(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	var limits probe.Limits
	srv, e := serveAudited(t, ca, audittest.Dual(), Config{})
	rep := conformance(t, e, srv, Target{URL: srv.URL}, limits)
	rr := readinessAuditOf(t, e, srv, Target{URL: srv.URL}, limits)
	for what, got := range map[string]struct {
		s *surface.Surface
		l *surface.Listing
		v any
	}{"conformance": {rep.Surface, rep.Listing, rep}, "readiness": {rr.Surface, rr.Listing, rr}} {
		if got.s == nil || got.l == nil {
			t.Fatalf("%s: surface %v, listing %v", what, got.s != nil, got.l != nil)
		}
		if h := surface.Digest(*got.l).Hash; h != got.s.Hash || len(got.l.Tools) != 3 {
			t.Errorf("%s: the listing hashes to %s with %d tools, the surface is %s", what, h, len(got.l.Tools), got.s.Hash)
		}
		body, err := json.Marshal(got.v)
		if err != nil {
			t.Fatal(err)
		}
		// A description as sent is in the listing only: the surface holds its hash.
		if strings.Contains(string(body), got.l.Tools[0].Description) || strings.Contains(string(body), `"Listing"`) {
			t.Errorf("%s: the report's JSON holds the listing", what)
		}
		if changes := surface.CompareListings(*got.l, *got.l); len(changes) != 0 {
			t.Errorf("%s: a listing compared with itself changed: %+v", what, changes)
		}
	}

	// Nothing listed, no listing.
	down := Target{URL: audittest.Down()}
	if r, err := auditorFor(t, ca, portOf(t, down.URL), Config{}).Conformance(t.Context(), down); err != nil || r.Listing != nil || r.Surface != nil {
		t.Errorf("a server that is down: listing %v, surface %v, error %v", r.Listing, r.Surface, err)
	}
}

// TestEngineListingRedacted: a target that copies the caller's credential into its tools has it
// redacted from the listing as from the report.
func TestEngineListingRedacted(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	var limits probe.Limits
	srv, e := serveAudited(t, ca, nameAfterCredential(), Config{})
	target := bearerTarget(srv, correctToken)
	for what, l := range map[string]*surface.Listing{
		"conformance": conformance(t, e, srv, target, limits).Listing,
		"readiness":   readinessAuditOf(t, e, srv, target, limits).Listing,
	} {
		body, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if l == nil || strings.Contains(string(body), correctToken) || !strings.Contains(string(body), "[redacted]") {
			t.Errorf("%s: listing %s, want the credential redacted", what, body)
		}
	}
}

// portOf is the port of raw, a loopback URL with one.
func portOf(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
