package app_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

// TestLargeBodiesAreAuthenticatedFirst: a body larger than the body cap, of unknown length, sent
// without a valid credential, is refused with the route's own 401 before it is read (read first, it
// would be a 413), for each of the service's credentials; with a small body the answer is the same.
func TestLargeBodiesAreAuthenticatedFirst(t *testing.T) {
	t.Parallel()
	s := startService(t)
	cases := []struct {
		name, path string
		header     map[string]string
	}{
		{"bearer key", "/v1/intelligence/compare/batch", nil},
		{"revoked-looking bearer key", "/v1/intelligence/webhooks/endpoints", bearer("vk_not-a-key")},
		{"admin token", "/v1/intelligence/organizations", nil},
		{"wrong admin token", "/v1/audits/tokens", servicetest.Admin("wrong")},
		{"audit token", "/v1/audits/mcp", nil},
		{"watch key", "/v1/watch/watches", bearer("wk_not-a-key")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			large := s.Do("POST", c.path, servicetest.Unsized(4<<20), c.header)
			small := s.Do("POST", c.path, map[string]any{}, c.header)
			if large.Status != http.StatusUnauthorized || small.Status != http.StatusUnauthorized || !bytes.Equal(large.Body, small.Body) {
				t.Fatalf("POST %s: large body %d %s, small body %d %s; want the same 401 for both",
					c.path, large.Status, large.Body, small.Status, small.Body)
			}
		})
	}
}
