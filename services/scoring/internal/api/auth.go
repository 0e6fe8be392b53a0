// Package api implements the scoring service's gRPC servers (and so, through the gateway, its JSON
// routes): it authenticates callers, translates between proto and the use cases, meters billable
// calls and maps domain errors to the README's error bodies (errors.go).
package api

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// access is who may call a method.
type access int

const (
	bearer access = iota // an API key or legacy JWT (the default for every scoring.v1 method)
	public               // nobody needs a credential
	admin                // X-Admin-Token

	workspace // a control-plane workspace session (controlplane.go)
)

const servicePrefix = "/scoring.v1."

// methodAccess lists the methods that are not bearer-only. Every other scoring.v1 method needs a
// bearer token: a method added later is protected unless it is listed here.
var methodAccess = map[string]access{
	"/scoring.v1.KeyService/IssueTrialKey":                  public,
	"/scoring.v1.KeyService/IssueApiKey":                    admin,
	"/scoring.v1.KeyService/IssueToken":                     admin,
	"/scoring.v1.PolicySignalService/PutPayerMapping":       admin,
	"/scoring.v1.PolicySignalService/ListPayerMappings":     admin,
	"/scoring.v1.PolicySignalService/DeletePayerMapping":    admin,
	"/scoring.v1.PolicySignalService/ListPolicySignals":     admin,
	"/scoring.v1.BillingService/CreateAdminCheckoutSession": admin,
	"/scoring.v1.BillingService/GetBillingAccountStatus":    admin,

	// The control plane: signup and login are open; the rest needs a workspace session.
	"/scoring.v1.ControlPlaneService/Signup":                public,
	"/scoring.v1.ControlPlaneService/Login":                 public,
	"/scoring.v1.ControlPlaneService/Logout":                workspace,
	"/scoring.v1.ControlPlaneService/GetWorkspace":          workspace,
	"/scoring.v1.ControlPlaneService/UpdateWorkspace":       workspace,
	"/scoring.v1.ControlPlaneService/CreateWorkspaceApiKey": workspace,
	"/scoring.v1.ControlPlaneService/ListWorkspaceApiKeys":  workspace,
	"/scoring.v1.ControlPlaneService/RevokeWorkspaceApiKey": workspace,
	// The setup link's token is its credential.
	"/scoring.v1.ControlPlaneService/GetKeySetup":    public,
	"/scoring.v1.ControlPlaneService/RevealKeySetup": public,
}

type callerKey struct{}

// callerFrom returns the authenticated key of a bearer method's context.
func callerFrom(ctx context.Context) keys.Key {
	k, _ := ctx.Value(callerKey{}).(keys.Key)
	return k
}

// Credentials authenticates a bearer token: keys.Service (API keys, legacy JWTs), or the OAuth
// server's Authenticator, which also accepts its access tokens and hands every other token to
// keys.Service.
type Credentials interface {
	Authenticate(ctx context.Context, token string) (keys.Key, error)
}

// Authenticate guards every scoring.v1 method by methodAccess. A bearer method's key goes into the
// context for the handler. Methods of other packages (build info, health) pass.
func Authenticate(adminToken string, creds Credentials, opts ...AuthOption) grpc.UnaryServerInterceptor {
	var o authOptions
	for _, opt := range opts {
		opt(&o)
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, servicePrefix) {
			return handler(ctx, req)
		}
		switch methodAccess[info.FullMethod] {
		case public:
			return handler(ctx, req)
		case admin:
			if v := metadata.ValueFromIncomingContext(ctx, strings.ToLower(auth.AdminHeader)); len(v) != 1 || !auth.AdminTokenMatches(v[0], adminToken) {
				return nil, auth.ErrAdminToken
			}
			return handler(ctx, req)
		case workspace:
			md, _ := metadata.FromIncomingContext(ctx)
			ctx, err := workspaceSession(ctx, o.sessions, md)
			if err != nil {
				return nil, err
			}
			return handler(ctx, req)
		}
		// Two lookups rather than FromIncomingContext, which copies every header of the request on
		// the scoring routes' path (about 0.5 KB a request).
		key, err := Bearer(ctx, creds, func(name string) []string { return metadata.ValueFromIncomingContext(ctx, name) })
		if err != nil {
			return nil, err
		}
		return handler(context.WithValue(ctx, callerKey{}, key), req)
	}
}

// Bearer authenticates the bearer token of a request (Authorization: Bearer, or the hosted-agent
// header x-service-api-key), whose header values header returns by lower-case name.
func Bearer(ctx context.Context, creds Credentials, header func(name string) []string) (keys.Key, error) {
	var token string
	if v := header("authorization"); len(v) == 1 {
		token = auth.BearerToken(v[0])
	}
	if v := header("x-service-api-key"); token == "" && len(v) == 1 {
		token = strings.TrimSpace(v[0])
	}
	if token == "" {
		return keys.Key{}, ErrMissingBearer
	}
	key, err := creds.Authenticate(ctx, token)
	if errors.Is(err, keys.ErrUnauthenticated) {
		return keys.Key{}, ErrInvalidBearer
	}
	return key, err
}
