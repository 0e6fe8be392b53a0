package serve

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// Defaults of the HTTP server's limits; each service documents them as <PREFIX>_MAX_BODY_BYTES,
// <PREFIX>_HTTP_READ_HEADER_TIMEOUT, <PREFIX>_HTTP_READ_TIMEOUT, <PREFIX>_HTTP_WRITE_TIMEOUT,
// <PREFIX>_HTTP_IDLE_TIMEOUT and <PREFIX>_MAX_CONNECTIONS (pkg/config).
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	// DefaultWriteTimeout is above the longest non-streaming route (an audit, up to 45 s).
	DefaultWriteTimeout   = 60 * time.Second
	DefaultIdleTimeout    = 120 * time.Second
	DefaultMaxConnections = 4096
)

// RouteLimits overrides the server-wide body cap and write timeout for the requests whose path is
// Path, or starts with it when Path ends in "/".
type RouteLimits struct {
	Path string
	// MaxBodyBytes is the route's body cap; 0 keeps the server's.
	MaxBodyBytes int64
	// WriteTimeout is the time the route has to answer; 0 keeps the server's, a negative value means
	// none (a stream that stays open).
	WriteTimeout time.Duration
}

// limitsFor returns the body cap and write timeout of a request's path.
func (s *Server) limitsFor(path string) (int64, time.Duration) {
	maxBody, write := s.cfg.MaxBodyBytes, time.Duration(0)
	for _, rl := range s.cfg.Routes {
		if path == rl.Path || strings.HasSuffix(rl.Path, "/") && strings.HasPrefix(path, rl.Path) {
			if rl.MaxBodyBytes > 0 {
				maxBody = rl.MaxBodyBytes
			}
			write = rl.WriteTimeout
			break
		}
	}
	return maxBody, write
}

// limitBody caps every request body before any handler decodes it: a body declared larger than the
// cap is refused with 413 unread, and one that turns out larger (chunked) fails its read at the cap,
// which the gateway and the plain handlers answer with 413. The read timeout bounds reading the
// request (headers and body); once the body is read, the deadline is lifted, so that a handler that
// runs longer (an audit, an SSE stream) keeps its context.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		maxBody, write := s.limitsFor(r.URL.Path)
		rc := http.NewResponseController(w)
		if write < 0 {
			_ = rc.SetWriteDeadline(time.Time{})
		} else if write > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(write))
		}
		if r.ContentLength > maxBody {
			gateway.WriteJSON(w, http.StatusRequestEntityTooLarge, gateway.TooLargeBody)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			r.Body = &readBody{ReadCloser: http.MaxBytesReader(w, r.Body, maxBody), rc: rc}
		}
		next.ServeHTTP(w, r)
	})
}

// readBody lifts the connection's read deadline once the body is read to its end.
type readBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *readBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
