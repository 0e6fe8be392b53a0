package safehttp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
)

func TestPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("other"), false},
		{&Error{Kind: KindBadURL}, true},
		{&Error{Kind: KindHostNotAllowed}, true},
		{&Error{Kind: KindBlockedAddress}, true},
		{&Error{Kind: KindTooLarge}, true},
		{&Error{Kind: KindMIME}, true},
		{&Error{Kind: KindTooManyRedirects}, true},
		{&Error{Kind: KindTLS}, true},
		{&Error{Kind: KindCanceled}, true},
		{&Error{Kind: KindStatus, Status: 404}, true},
		{&Error{Kind: KindStatus, Status: 501}, true},
		{&Error{Kind: KindStatus, Status: 429}, false},
		{&Error{Kind: KindStatus, Status: 503}, false},
		{&Error{Kind: KindTimeout}, false},
		{&Error{Kind: KindNetwork}, false},
		{&Error{Kind: KindDNS}, false},
		{fmt.Errorf("wrapped: %w", &Error{Kind: KindBlockedAddress}), true},
	}
	for _, tt := range tests {
		if got := Permanent(tt.err); got != tt.want {
			t.Errorf("Permanent(%v): got %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	err := &Error{
		Kind:     KindBlockedAddress,
		Host:     "docs.example.test",
		Addr:     netip.MustParseAddr("10.0.0.5"),
		Reason:   "private network (RFC 1918)",
		Attempts: 1,
	}
	want := `safehttp: blocked address: host "docs.example.test": address 10.0.0.5: private network (RFC 1918)`
	if got := err.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	status := &Error{Kind: KindStatus, Status: 503, Host: "h.test", Attempts: 3}
	if got, want := status.Error(), `safehttp: unexpected status 503: host "h.test" (after 3 attempts)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Kind(99).String(); got != "kind(99)" {
		t.Errorf("Kind(99): got %q", got)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	live := context.Background()
	expired, cancel := context.WithTimeout(live, 0)
	defer cancel()
	canceled, cancel2 := context.WithCancel(live)
	cancel2()
	tests := []struct {
		name            string
		err             error
		parent, attempt context.Context
		want            Kind
	}{
		{"ours passes through", &Error{Kind: KindMIME}, live, live, KindMIME},
		{"caller canceled", errors.New("x"), canceled, canceled, KindCanceled},
		{"attempt deadline", errors.New("x"), live, expired, KindTimeout},
		{"deadline error", context.DeadlineExceeded, live, live, KindTimeout},
		{"other", errors.New("connection reset by peer"), live, live, KindNetwork},
	}
	for _, tt := range tests {
		if got := classify(tt.err, tt.parent, tt.attempt, "h.test"); got.Kind != tt.want || got.Host != "h.test" {
			t.Errorf("%s: got %v (host %q), want %v", tt.name, got.Kind, got.Host, tt.want)
		}
	}
}
