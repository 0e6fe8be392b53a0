package ops

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestIsPrivate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", true}, {"127.255.0.9", true}, {"::1", true},
		{"10.0.0.1", true}, {"10.255.255.255", true},
		{"172.16.0.1", true}, {"172.31.255.254", true}, {"172.15.255.255", false}, {"172.32.0.1", false},
		{"192.168.1.1", true}, {"192.169.0.1", false},
		{"fc00::1", true}, {"fd12:3456::1", true}, {"fe00::1", false},
		{"169.254.169.254", true}, {"fe80::1", true}, {"fe80::1%eth0", true},
		{"::ffff:10.1.2.3", true}, {"::ffff:8.8.8.8", false},
		{"8.8.8.8", false}, {"203.0.113.7", false}, {"2001:db8::1", false}, {"100.64.0.1", false},
		{"0.0.0.0", false}, {"::", false}, {"224.0.0.1", false},
	} {
		if got := IsPrivate(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("IsPrivate(%s): got %v, want %v", tc.addr, got, tc.want)
		}
	}
	if IsPrivate(netip.Addr{}) {
		t.Error("IsPrivate(zero Addr): got true, want false")
	}
}

func TestPrivateOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		remote string
		xff    []string
		hops   int
		want   int
	}{
		{"loopback peer", "127.0.0.1:5000", nil, 0, 200},
		{"IPv6 loopback peer", "[::1]:5000", nil, 0, 200},
		{"RFC 1918 peer", "10.2.3.4:5000", nil, 0, 200},
		{"link-local IPv6 peer with zone", "[fe80::1%eth0]:5000", nil, 0, 200},
		{"public peer", "203.0.113.7:5000", nil, 0, 403},
		{"no trusted proxies: a forged header is ignored", "203.0.113.7:5000", []string{"10.0.0.1"}, 0, 403},
		{"no trusted proxies: a private peer stays private whatever the header", "10.0.0.9:5000", []string{"203.0.113.7"}, 0, 200},
		{"one proxy: the caller it reports is public", "10.0.0.9:5000", []string{"203.0.113.7"}, 1, 403},
		{"one proxy: the caller it reports is private", "10.0.0.9:5000", []string{"10.1.1.1"}, 1, 200},
		{"one proxy: entries left of the caller are the caller's own", "10.0.0.9:5000", []string{"10.1.1.1, 203.0.113.7"}, 1, 403},
		{"one proxy: a private lie left of a public caller", "10.0.0.9:5000", []string{"127.0.0.1", "203.0.113.7"}, 1, 403},
		{"one proxy configured, straight from the internet with a forged header", "203.0.113.7:5000", []string{"10.0.0.1"}, 1, 403},
		{"one proxy configured, scraped directly from inside", "10.0.0.9:5000", nil, 1, 200},
		{"two proxies, both private", "10.0.0.9:5000", []string{"192.168.0.5, 10.0.0.8"}, 2, 200},
		{"two proxies, the outer one public", "10.0.0.9:5000", []string{"192.168.0.5, 198.51.100.1"}, 2, 403},
		{"malformed hop", "10.0.0.9:5000", []string{"10.1.1.1:8080"}, 1, 403},
		{"mapped IPv4 caller", "10.0.0.9:5000", []string{"::ffff:10.1.1.1"}, 1, 200},
		{"unparseable peer", "pipe", nil, 0, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := PrivateOnly(tc.hops, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
			r := httptest.NewRequest("GET", "/metrics", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("got %d, want %d", w.Code, tc.want)
			}
			if tc.want == 403 && w.Body.String() != `{"detail":"GET /metrics is answered to private-network callers only"}`+"\n" {
				t.Errorf("403 body %q", w.Body.String())
			}
		})
	}
}
