package api

import (
	"context"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
)

const (
	servicePrefix = "/verification.v1."
	adminPrefix   = "/verification.v1.OrganizationService/"
)

// Authenticate guards every verification.v1 method but AuditService's and WatchService's:
// OrganizationService takes the admin token (X-Admin-Token), every other service a bearer API key,
// whose caller it puts in the context (identity.From). Methods of other packages (build info,
// health) pass. Every bearer request reads the database; the service itself uses AuthenticateCached.
func Authenticate(adminToken string, tenants *organizations.Service) grpc.UnaryServerInterceptor {
	return authenticate(adminToken, KeyLookup(tenants))
}

// AuthenticateCached is Authenticate with the bearer keys looked up through keys, which keeps
// lookups while it hears about every revocation.
func AuthenticateCached(adminToken string, keys *identity.Keys) grpc.UnaryServerInterceptor {
	return authenticate(adminToken, keys.Authenticate)
}

// KeyLookup is the organizations' bearer-key check as an identity.Lookup: fault.ErrUnauthenticated for an
// unknown or revoked key.
func KeyLookup(tenants *organizations.Service) identity.Lookup {
	return func(ctx context.Context, token string) (identity.Caller, error) {
		key, org, err := tenants.Authenticate(ctx, token)
		if err != nil {
			return identity.Caller{}, err
		}
		return identity.Caller{
			OrganizationID: org.ID, OrganizationName: org.Name, KeyID: key.ID, KeyName: key.Name, KeyPrefix: key.Prefix,
		}, nil
	}
}

func authenticate(adminToken string, lookup identity.Lookup) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		// AuditService and WatchService have token systems of their own (AuthenticateAudits,
		// AuthenticateWatch).
		// PublicService needs no credential.
		if !strings.HasPrefix(info.FullMethod, servicePrefix) || strings.HasPrefix(info.FullMethod, auditPrefix) ||
			strings.HasPrefix(info.FullMethod, watchPrefix) || strings.HasPrefix(info.FullMethod, publicPrefix) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if strings.HasPrefix(info.FullMethod, adminPrefix) {
			if !adminAllowed(md, adminToken) {
				return nil, auth.ErrAdminToken
			}
			return handler(ctx, req)
		}
		token := bearer(md)
		if token == "" {
			return nil, errMissingBearer
		}
		caller, err := lookup(ctx, token)
		if err != nil {
			return nil, toAPI(err, target{})
		}
		return handler(identity.With(ctx, caller), req)
	}
}

// adminAllowed reports whether md carries the admin token (X-Admin-Token).
func adminAllowed(md metadata.MD, adminToken string) bool {
	v := md.Get(strings.ToLower(auth.AdminHeader))
	return len(v) == 1 && auth.AdminTokenMatches(v[0], adminToken)
}

// bearer returns md's bearer token, "" when there is none.
func bearer(md metadata.MD) string {
	if v := md.Get("authorization"); len(v) == 1 {
		return auth.BearerToken(v[0])
	}
	return ""
}

// ForgetOnRevoke returns st, which makes keys forget every cached lookup as soon as a revocation
// through it commits: the revoking replica refuses the key from the route's answer on, without
// waiting for its own notification.
func ForgetOnRevoke(st organizations.Store, keys *identity.Keys) organizations.Store {
	return forgetOnRevoke{Store: st, keys: keys}
}

type forgetOnRevoke struct {
	organizations.Store
	keys *identity.Keys
}

func (s forgetOnRevoke) RevokeAPIKey(ctx context.Context, organizationID, keyID uuid.UUID) error {
	err := s.Store.RevokeAPIKey(ctx, organizationID, keyID)
	// Forgotten even on an error: the UPDATE may have committed before the error reached us.
	s.keys.Forget()
	return err
}
