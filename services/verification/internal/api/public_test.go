package api

import "testing"

func TestForwardedClient(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		values []string
		peer   string
		hops   int
		want   string
	}{
		{nil, "203.0.113.5:443", 0, "203.0.113.5"},
		{[]string{"198.51.100.1, 10.0.0.1"}, "", 0, "10.0.0.1"},
		{[]string{"198.51.100.1, 10.0.0.1"}, "", 1, "198.51.100.1"},
		{[]string{"6.6.6.6, 198.51.100.1", "10.0.0.1"}, "", 1, "198.51.100.1"},
		{[]string{"10.0.0.1"}, "", 5, "10.0.0.1"},
		{[]string{"2001:db8:1:2:3:4:5:6"}, "", 0, "2001:db8:1:2::/64"},
		{[]string{"::ffff:192.0.2.1"}, "", 0, "192.0.2.1"},
		{[]string{"not-an-address"}, "", 0, ""},
		{nil, "", 0, ""},
	} {
		if got := ForwardedClient(c.values, c.peer, c.hops); got != c.want {
			t.Errorf("%v peer %q hops %d: got %q, want %q", c.values, c.peer, c.hops, got, c.want)
		}
	}
}
