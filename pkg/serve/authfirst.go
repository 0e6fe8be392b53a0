package serve

import (
	"context"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// AuthFirstAbove is the body size above which a gateway call is authenticated before its body is
// read. A smaller body is read first and the call authenticated once, by its interceptors, as every
// call is: reading 64 KiB costs less than a second authentication. A larger body, or one of unknown
// length (chunked), is not read for a caller the interceptors would refuse: the service answers
// their 401 or 403 with the body unread, so that an anonymous client cannot make it read up to the
// body cap.
const AuthFirstAbove = 64 << 10

// authenticateFirst is the gateway middleware that runs the call's interceptors before the body is
// read when the body is large (AuthFirstAbove). It runs the whole chain the call will run (error
// mapping, then the service's authentication) with a handler that does nothing, on the metadata the
// gateway would pass: the interceptors see the same call, once without its request message. They
// must therefore not count a call as made before its handler runs (none does: quotas and metering
// count in the handlers).
func (s *Server) authenticateFirst(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength >= 0 && r.ContentLength <= AuthFirstAbove {
			next(w, r, params)
			return
		}
		if method, path := s.gatewayMethod(r); method != "" {
			if err := s.authenticate(r, method, path); err != nil {
				runtime.HTTPError(r.Context(), s.gateway, &runtime.JSONPb{}, w, r, err)
				return
			}
		}
		next(w, r, params)
	}
}

// gatewayMethod returns the gRPC method and path template of the gateway rule r matched.
func (s *Server) gatewayMethod(r *http.Request) (method, path string) {
	pat, ok := runtime.HTTPPattern(r.Context())
	if !ok {
		return "", ""
	}
	// Pattern.String writes captures as {name=*}; the rules' templates as {name}.
	path = strings.ReplaceAll(pat.String(), "=*}", "}")
	s.routesMu.Lock()
	defer s.routesMu.Unlock()
	return s.gatewayMethods[r.Method+" "+path], path
}

// authenticate runs the interceptors of method on r's metadata with a handler that does nothing.
func (s *Server) authenticate(r *http.Request, method, path string) error {
	ctx, err := runtime.AnnotateContext(r.Context(), s.gateway, r, method, runtime.WithHTTPPathPattern(path))
	if err != nil {
		return err
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	sctx := grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(ctx, md), &transportStream{method: method})
	_, err = s.inproc.interceptor(sctx, nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) { return nil, nil })
	return err
}
