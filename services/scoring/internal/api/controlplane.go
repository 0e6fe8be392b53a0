package api

import (
	"context"
	"errors"
	"net/http"
	"net/netip"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
)

// ControlPlane implements scoring.v1.ControlPlaneService.
type ControlPlane struct {
	scoringv1.UnimplementedControlPlaneServiceServer
	cp *controlplane.Service
	// proxyHops is how many trusted proxies in front of the service append to X-Forwarded-For.
	proxyHops int
}

// NewControlPlane returns the service. trustedProxyHops is the number of proxies (load balancer,
// ingress) in front of the service that append the client address to X-Forwarded-For; 0 trusts no
// forwarded address and throttles by the connection's own address.
func NewControlPlane(cp *controlplane.Service, trustedProxyHops int) *ControlPlane {
	return &ControlPlane{cp: cp, proxyHops: trustedProxyHops}
}

type sessionKey struct{}

// sessionFrom returns the workspace session of a workspace method's context.
func sessionFrom(ctx context.Context) controlplane.Session {
	s, _ := ctx.Value(sessionKey{}).(controlplane.Session)
	return s
}

// SessionAuthenticator checks workspace session tokens (controlplane.Service has it).
type SessionAuthenticator interface {
	Authenticate(ctx context.Context, token string) (controlplane.Session, error)
}

// AuthOption configures Authenticate.
type AuthOption func(*authOptions)

type authOptions struct {
	sessions SessionAuthenticator
}

// WithSessions lets Authenticate admit workspace methods with a workspace session; without it they
// answer 401.
func WithSessions(s SessionAuthenticator) AuthOption {
	return func(o *authOptions) { o.sessions = s }
}

// workspaceSession authenticates the session token of md (Authorization: Bearer) and returns ctx
// carrying the session. API keys are not sessions: a key cannot manage keys.
func workspaceSession(ctx context.Context, sessions SessionAuthenticator, md metadata.MD) (context.Context, error) {
	var token string
	if v := md.Get("authorization"); len(v) == 1 {
		token = auth.BearerToken(v[0])
	}
	if token == "" {
		return nil, errSessionMissing
	}
	if sessions == nil {
		return nil, errSessionInvalid
	}
	sess, err := sessions.Authenticate(ctx, token)
	if errors.Is(err, controlplane.ErrUnauthenticated) {
		return nil, errSessionInvalid
	}
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, sessionKey{}, sess), nil
}

// Signup is POST /v1/control-plane/auth/signup: 201 with a session for a new workspace, 200 when the
// e-mail and password are those of an existing workspace (a repeated signup logs in).
func (c *ControlPlane) Signup(ctx context.Context, req *scoringv1.SignupRequest) (*scoringv1.SignupResponse, error) {
	o, err := c.cp.Signup(ctx, controlplane.Credentials{Email: req.GetEmail(), Password: req.GetPassword(), ClientIP: clientIP(ctx, c.proxyHops)}, req.GetWorkspaceName())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	if o.Created {
		_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	}
	return &scoringv1.SignupResponse{Session: c.sessionToProto(o)}, nil
}

// Login is POST /v1/control-plane/auth/login.
func (c *ControlPlane) Login(ctx context.Context, req *scoringv1.LoginRequest) (*scoringv1.LoginResponse, error) {
	o, err := c.cp.Login(ctx, controlplane.Credentials{Email: req.GetEmail(), Password: req.GetPassword(), ClientIP: clientIP(ctx, c.proxyHops)})
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return &scoringv1.LoginResponse{Session: c.sessionToProto(o)}, nil
}

// Logout is POST /v1/control-plane/auth/logout (204).
func (c *ControlPlane) Logout(ctx context.Context, _ *scoringv1.LogoutRequest) (*scoringv1.LogoutResponse, error) {
	if err := c.cp.Logout(ctx, sessionFrom(ctx)); err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusNoContent)
	return &scoringv1.LogoutResponse{}, nil
}

// GetWorkspace is GET /v1/control-plane/workspace.
func (c *ControlPlane) GetWorkspace(ctx context.Context, _ *scoringv1.GetWorkspaceRequest) (*scoringv1.GetWorkspaceResponse, error) {
	return &scoringv1.GetWorkspaceResponse{Workspace: workspaceToProto(sessionFrom(ctx).Workspace)}, nil
}

// UpdateWorkspace is POST /v1/control-plane/workspace (rename).
func (c *ControlPlane) UpdateWorkspace(ctx context.Context, req *scoringv1.UpdateWorkspaceRequest) (*scoringv1.UpdateWorkspaceResponse, error) {
	w, err := c.cp.Rename(ctx, sessionFrom(ctx), req.GetWorkspaceName())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return &scoringv1.UpdateWorkspaceResponse{Workspace: workspaceToProto(w)}, nil
}

// CreateWorkspaceApiKey is POST /v1/control-plane/workspace/api-keys (201).
func (c *ControlPlane) CreateWorkspaceApiKey(ctx context.Context, req *scoringv1.CreateWorkspaceApiKeyRequest) (*scoringv1.CreateWorkspaceApiKeyResponse, error) {
	created, err := c.cp.CreateKey(ctx, sessionFrom(ctx), req.GetName(), req.GetDelivery())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.CreatedWorkspaceKey{
		Id: created.ID, Prefix: created.Prefix, Name: created.Name, Plan: created.Plan,
		CreatedAt: timestamppb.New(created.CreatedAt), Delivery: created.Delivery,
	}
	if created.Secret != "" {
		out.Key = proto.String(created.Secret)
	}
	if created.SetupURL != "" {
		out.SetupUrl = proto.String(created.SetupURL)
		out.SetupExpiresAt = timestamppb.New(created.SetupExpiresAt)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.CreateWorkspaceApiKeyResponse{Key: out}, nil
}

// ListWorkspaceApiKeys is GET /v1/control-plane/workspace/api-keys.
func (c *ControlPlane) ListWorkspaceApiKeys(ctx context.Context, _ *scoringv1.ListWorkspaceApiKeysRequest) (*scoringv1.ListWorkspaceApiKeysResponse, error) {
	list, err := c.cp.ListKeys(ctx, sessionFrom(ctx))
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := make([]*scoringv1.WorkspaceApiKey, len(list))
	for i, k := range list {
		out[i] = &scoringv1.WorkspaceApiKey{Id: k.ID, Prefix: k.Prefix, Name: k.Name, Status: k.Status, CreatedAt: timestamppb.New(k.CreatedAt)}
		if k.RevokedAt != nil {
			out[i].RevokedAt = timestamppb.New(*k.RevokedAt)
		}
	}
	return &scoringv1.ListWorkspaceApiKeysResponse{ApiKeys: out}, nil
}

// RevokeWorkspaceApiKey is DELETE /v1/control-plane/workspace/api-keys/{key_id} (204).
func (c *ControlPlane) RevokeWorkspaceApiKey(ctx context.Context, req *scoringv1.RevokeWorkspaceApiKeyRequest) (*scoringv1.RevokeWorkspaceApiKeyResponse, error) {
	if err := c.cp.RevokeKey(ctx, sessionFrom(ctx), req.GetKeyId()); err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusNoContent)
	return &scoringv1.RevokeWorkspaceApiKeyResponse{}, nil
}

// GetKeySetup is GET /v1/control-plane/setup?token=...: what the link holds, without using it.
func (c *ControlPlane) GetKeySetup(ctx context.Context, req *scoringv1.GetKeySetupRequest) (*scoringv1.GetKeySetupResponse, error) {
	k, expires, err := c.cp.SetupStatus(ctx, req.GetToken())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return &scoringv1.GetKeySetupResponse{Setup: &scoringv1.KeySetup{
		Status: "pending", KeyId: k.ID, Prefix: k.Prefix, Name: k.Name, ExpiresAt: timestamppb.New(expires),
	}}, nil
}

// RevealKeySetup is POST /v1/control-plane/setup?token=...: the key, once; 410 afterwards.
func (c *ControlPlane) RevealKeySetup(ctx context.Context, req *scoringv1.RevealKeySetupRequest) (*scoringv1.RevealKeySetupResponse, error) {
	k, err := c.cp.RevealSetup(ctx, req.GetToken())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return &scoringv1.RevealKeySetupResponse{Key: &scoringv1.RevealedKey{
		Key: k.Secret, Id: k.ID, Prefix: k.Prefix, Name: k.Name, Plan: k.Plan, CreatedAt: timestamppb.New(k.CreatedAt),
	}}, nil
}

func (c *ControlPlane) sessionToProto(o controlplane.Opened) *scoringv1.WorkspaceSession {
	return &scoringv1.WorkspaceSession{
		SessionToken: o.Token, TokenType: "Bearer", ExpiresAt: timestamppb.New(o.ExpiresAt),
		IdleTimeoutSeconds: int32(c.cp.IdleTimeout().Seconds()), Workspace: workspaceToProto(o.Workspace),
	}
}

func workspaceToProto(w controlplane.Workspace) *scoringv1.Workspace {
	return &scoringv1.Workspace{Id: w.ID, Email: w.Email, WorkspaceName: w.Name, Plan: w.Plan, CreatedAt: timestamppb.New(w.CreatedAt)}
}

// clientIP is the address the sign-in throttle and the trial key limit count a request against: a
// direct gRPC caller's peer address, or, through the gateway (which appends the connection's address
// to X-Forwarded-For), the caller by ForwardedClient's rule with proxyHops trusted proxies. An IPv6
// address counts as its /64: one subscriber holds a whole /64. "" when no address parses.
func clientIP(ctx context.Context, proxyHops int) string {
	var addr netip.Addr
	var ok bool
	if p, isPeer := peer.FromContext(ctx); isPeer && p.Addr != nil {
		ap, err := netip.ParseAddrPort(p.Addr.String())
		addr, ok = ap.Addr().Unmap(), err == nil
	} else {
		md, _ := metadata.FromIncomingContext(ctx)
		addr, _, ok = ForwardedClient(md.Get("x-forwarded-for"), netip.Addr{}, proxyHops)
	}
	if !ok {
		return ""
	}
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}
