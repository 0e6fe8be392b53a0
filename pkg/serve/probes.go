package serve

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// readinessTimeout bounds each readiness check so that a hung dependency answers 503, not a hung probe.
const readinessTimeout = 2 * time.Second

func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	gateway.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "service": s.cfg.Name})
}

func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	checks, ok := s.ready(r.Context())
	body := map[string]any{"status": "ready", "checks": checks}
	code := http.StatusOK
	if !ok {
		body["status"] = "not_ready"
		code = http.StatusServiceUnavailable
	}
	gateway.WriteJSON(w, code, body)
}

// ready runs every readiness check. The result names each check "ok" or "unavailable"; causes are
// logged, not returned, since they can name hosts and users.
func (s *Server) ready(ctx context.Context) (map[string]string, bool) {
	names := make([]string, 0, len(s.cfg.Readiness))
	for n := range s.cfg.Readiness {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]string, len(names))
	ok := true
	for _, n := range names {
		cctx, cancel := context.WithTimeout(ctx, readinessTimeout)
		err := s.cfg.Readiness[n](cctx)
		cancel()
		if err != nil {
			ok = false
			out[n] = "unavailable"
			s.log.WarnContext(ctx, "readiness check failed", "check", n, "error", err)
			continue
		}
		out[n] = "ok"
	}
	return out, ok
}
