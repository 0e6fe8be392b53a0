package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

const watchPrefix = "/verification.v1.WatchService/"

// The watch API's authentication failures: a plain-string detail that is a stable code.
var (
	errWatchMissing = apierror.New(http.StatusUnauthorized, "missing_bearer_token")
	errWatchInvalid = apierror.New(http.StatusUnauthorized, "invalid_or_revoked_api_key")
	errWatchExpired = apierror.New(http.StatusUnauthorized, "expired_api_key")
)

// watchAdminMethods take the admin token (X-Admin-Token): the routes of watch API keys.
var watchAdminMethods = map[string]bool{
	watchPrefix + "CreateWatchApiKey": true,
	watchPrefix + "ListWatchApiKeys":  true,
	watchPrefix + "RevokeWatchApiKey": true,
}

// watchReads are the methods a key with watch:read may call; every other keyed method needs
// watch:write.
var watchReads = map[string]bool{
	watchPrefix + "ListTargetWatches":   true,
	watchPrefix + "GetTargetWatch":      true,
	watchPrefix + "ListTargetWatchRuns": true,
	watchPrefix + "ListWatchPolicies":   true,
	watchPrefix + "GetWatchPolicy":      true,
}

// watchScopes returns the scopes a keyed method accepts: either for reads, watch:write for writes.
func watchScopes(method string) []string {
	if watchReads[method] {
		return []string{watch.ScopeRead, watch.ScopeWrite}
	}
	return []string{watch.ScopeWrite}
}

// WatchKeyLookup authenticates a watch API key (watch.Service.Authenticate).
type WatchKeyLookup func(ctx context.Context, token string) (watch.Caller, error)

type watchCallerKey struct{}

// AuthenticateWatch guards WatchService: the key routes take the admin token, the other methods a
// watch API key (Authorization: Bearer wk_...) with one of their scopes, whose caller it puts in the
// context. Every request reads the key from the database (no cache), so a revocation or an expiry
// works at once. Other methods pass.
func AuthenticateWatch(adminToken string, lookup WatchKeyLookup) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, watchPrefix) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if watchAdminMethods[info.FullMethod] {
			if !adminAllowed(md, adminToken) {
				return nil, auth.ErrAdminToken
			}
			return handler(ctx, req)
		}
		token := bearer(md)
		if token == "" {
			return nil, errWatchMissing
		}
		caller, err := lookup(ctx, token)
		switch {
		case errors.Is(err, fault.ErrUnauthenticated):
			return nil, errWatchInvalid
		case errors.Is(err, fault.ErrWatchKeyExpired):
			return nil, errWatchExpired
		case err != nil:
			return nil, err
		}
		need := watchScopes(info.FullMethod)
		if !caller.HasScope(need...) {
			return nil, apierror.New(http.StatusForbidden, "api_key_missing_required_scope: need one of "+strings.Join(need, ", "))
		}
		return handler(context.WithValue(ctx, watchCallerKey{}, caller), req)
	}
}

// watchCaller returns the caller AuthenticateWatch put in ctx.
func watchCaller(ctx context.Context) (watch.Caller, error) {
	c, ok := ctx.Value(watchCallerKey{}).(watch.Caller)
	if !ok {
		return watch.Caller{}, errWatchMissing
	}
	return c, nil
}
