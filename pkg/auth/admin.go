// Package auth holds the credential checks the services share.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

// AdminHeader is the header (and, lower-cased, the gRPC metadata key) that carries the admin token on
// every service (README "Ports and configuration").
const AdminHeader = "X-Admin-Token"

// ErrAdminToken is the answer to a missing or wrong admin token. It does not say which, so that it
// tells a prober nothing.
var ErrAdminToken = apierror.New(http.StatusUnauthorized, "Missing or invalid admin token (header X-Admin-Token)")

// AdminTokenMatches compares a presented token with the configured one in constant time. Both are
// hashed first so that the comparison does not reveal the configured token's length either.
func AdminTokenMatches(presented, configured string) bool {
	if presented == "" || configured == "" {
		return false
	}
	a := sha256.Sum256([]byte(presented))
	b := sha256.Sum256([]byte(configured))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// RequireAdmin returns a unary interceptor that rejects, with ErrAdminToken, every call to a method
// whose full name starts with one of the prefixes (e.g. "/ingestion.v1.") unless it carries the admin
// token. Other methods (health, build info) pass untouched.
func RequireAdmin(token string, prefixes ...string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		guarded := false
		for _, p := range prefixes {
			guarded = guarded || strings.HasPrefix(info.FullMethod, p)
		}
		if guarded {
			md, _ := metadata.FromIncomingContext(ctx)
			if v := md.Get(strings.ToLower(AdminHeader)); len(v) != 1 || !AdminTokenMatches(v[0], token) {
				return nil, ErrAdminToken
			}
		}
		return handler(ctx, req)
	}
}
