package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMovedFlagsAMaximumThatChangedByMoreThanAFifth(t *testing.T) {
	for _, tc := range []struct {
		now, before float64
		want        bool
	}{
		{22000, 22000, false},
		{18000, 22000, false}, // -18 %
		{13000, 22000, true},  // the slow spell of 2026-11-25
		{26000, 22000, false}, // +18 %
		{27000, 22000, true},
	} {
		if got := moved(tc.now, tc.before); got != tc.want {
			t.Errorf("moved(%v, %v) = %v, want %v", tc.now, tc.before, got, tc.want)
		}
	}
}

func TestMedianIsTheMiddleRound(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{7 * ms}, 7 * ms},
		{[]time.Duration{9 * ms, 5 * ms, 6 * ms}, 6 * ms},
		{[]time.Duration{4 * ms, 8 * ms}, 8 * ms}, // the upper of an even count
	} {
		in := append([]time.Duration(nil), tc.in...)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("median reordered its argument: %v, was %v", tc.in, in)
			}
		}
	}
}

func TestABBAOrder(t *testing.T) {
	var got []string
	abba(func(r int) { got = append(got, fmt.Sprintf("a%d", r)) }, func(r int) { got = append(got, fmt.Sprintf("b%d", r)) })
	if s := strings.Join(got, " "); s != "a0 b0 b1 a1" {
		t.Errorf("order %q, want a0 b0 b1 a1", s)
	}
}

// TestUnknownRoleIsAnErrorNotTheBench: a child started with a role this binary does not know must
// fail, not run the bench, which would start children of its own (a run of them filled PostgreSQL's
// connections once).
func TestUnknownRoleIsAnErrorNotTheBench(t *testing.T) {
	t.Setenv(roleVar, "service-renamed")
	served, err := serveRole(context.Background())
	if !served || err == nil {
		t.Fatalf("serveRole with an unknown role: served %v, error %v; want served and an error", served, err)
	}
	t.Setenv(roleVar, "")
	if served, err := serveRole(context.Background()); served || err != nil {
		t.Fatalf("serveRole without a role: served %v, error %v; want neither", served, err)
	}
}
