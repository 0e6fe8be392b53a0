package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/audittoken"
)

const auditPrefix = "/verification.v1.AuditService/"

// The audit routes' authentication failures, worded as the audit token system words them.
var (
	errAuditMissing = apierror.New(http.StatusUnauthorized, "Missing bearer token")
	errAuditInvalid = apierror.New(http.StatusUnauthorized, "Invalid or expired token")
)

// auditScopes are the scopes each audit method accepts.
var auditScopes = map[string][]string{
	auditPrefix + "AuditMcp":       {audittoken.ScopeAudit},
	auditPrefix + "AuditReadiness": {audittoken.ScopeReadiness},
	auditPrefix + "GetAudit":       {audittoken.ScopeAudit, audittoken.ScopeReadiness},
}

type holderKey struct{}

// AuthenticateAudits guards AuditService: IssueAuditToken takes the admin token, the other methods
// an audit JWT with one of their scopes, whose holder it puts in the context. Other methods pass.
func AuthenticateAudits(adminToken string, tokens *audittoken.Verifier) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, auditPrefix) {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		if info.FullMethod == auditPrefix+"IssueAuditToken" {
			if !adminAllowed(md, adminToken) {
				return nil, auth.ErrAdminToken
			}
			return handler(ctx, req)
		}
		token := bearer(md)
		if token == "" {
			return nil, errAuditMissing
		}
		claims, err := tokens.Verify(ctx, token)
		if err != nil {
			return nil, errAuditInvalid
		}
		need := auditScopes[info.FullMethod]
		for _, s := range need {
			if claims.HasScope(s) {
				return handler(context.WithValue(ctx, holderKey{}, audits.Holder{Issuer: claims.Issuer, Subject: claims.Subject}), req)
			}
		}
		return nil, apierror.New(http.StatusForbidden, "Token missing required scope. Need one of: "+strings.Join(need, ", "))
	}
}

// Audits implements verification.v1.AuditService.
type Audits struct {
	verificationv1.UnimplementedAuditServiceServer
	svc *audits.Service
}

// NewAudits returns the AuditService.
func NewAudits(svc *audits.Service) *Audits { return &Audits{svc: svc} }

// IssueAuditToken signs a token (201).
func (s *Audits) IssueAuditToken(ctx context.Context, req *verificationv1.IssueAuditTokenRequest) (*verificationv1.IssueAuditTokenResponse, error) {
	ttl := time.Duration(req.GetTtlSeconds()) * time.Second
	if req.GetTtlSeconds() < 0 || req.GetTtlSeconds() > int64(audits.MaxTokenTTL/time.Second) {
		ttl = -1 // out of range: refused by the use case, without overflowing the conversion
	}
	tok, err := s.svc.IssueToken(req.GetSubject(), req.GetScopes(), ttl)
	if err != nil {
		return nil, toAPI(err, target{})
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.IssueAuditTokenResponse{Token: tok.Token, ExpiresAt: ts(tok.ExpiresAt), TokenType: "Bearer", Scopes: tok.Scopes}, nil
}

// AuditMcp runs a conformance audit.
func (s *Audits) AuditMcp(ctx context.Context, req *verificationv1.AuditMcpRequest) (*verificationv1.AuditMcpResponse, error) {
	report, err := s.run(ctx, audits.KindConformance, req.GetUrl(), req.GetHeaders())
	if err != nil {
		return nil, err
	}
	return &verificationv1.AuditMcpResponse{Report: report}, nil
}

// AuditReadiness runs a readiness audit.
func (s *Audits) AuditReadiness(ctx context.Context, req *verificationv1.AuditReadinessRequest) (*verificationv1.AuditReadinessResponse, error) {
	report, err := s.run(ctx, audits.KindReadiness, req.GetUrl(), req.GetHeaders())
	if err != nil {
		return nil, err
	}
	return &verificationv1.AuditReadinessResponse{Report: report}, nil
}

// GetAudit reads a stored report of the caller's.
func (s *Audits) GetAudit(ctx context.Context, req *verificationv1.GetAuditRequest) (*verificationv1.GetAuditResponse, error) {
	id, err := pathID(req.GetAuditId(), auditTarget)
	if err != nil {
		return nil, err
	}
	rec, err := s.svc.Get(ctx, id, holder(ctx))
	if err != nil {
		return nil, auditError(err)
	}
	report, err := decodeReport(rec.Report)
	if err != nil {
		return nil, auditError(err)
	}
	return &verificationv1.GetAuditResponse{Report: report}, nil
}

func (s *Audits) run(ctx context.Context, kind, url string, headers map[string]string) (*verificationv1.AuditReport, error) {
	rec, err := s.svc.Run(ctx, kind, audit.Target{URL: url, Headers: headers}, holder(ctx))
	if err != nil {
		return nil, auditError(err)
	}
	report, err := decodeReport(rec.Report)
	if err != nil {
		return nil, auditError(err)
	}
	return report, nil
}

func holder(ctx context.Context) audits.Holder {
	h, _ := ctx.Value(holderKey{}).(audits.Holder)
	return h
}

var auditTarget = target{code: "audit_not_found", message: "Not found"}

// decodeReport turns a stored report into its proto. Unknown fields are an error, so that a report
// field the proto lacks fails the tests rather than vanishing from the answer.
func decodeReport(body []byte) (*verificationv1.AuditReport, error) {
	var r verificationv1.AuditReport
	if err := protojson.Unmarshal(body, &r); err != nil {
		return nil, errors.Join(audits.ErrAuditFailed, err)
	}
	return &r, nil
}

// auditError maps the audit use case's errors: a refused target is 400 with its code, the
// service's own failures 503, never a finding about the target.
func auditError(err error) error {
	if t, ok := safehttp.AsTargetError(err); ok {
		return apierror.Coded(http.StatusBadRequest, t.Code, t.Message, nil)
	}
	switch {
	case errors.Is(err, audits.ErrUnavailable):
		return apierror.Coded(http.StatusServiceUnavailable, "service_dependency_unavailable",
			"The service could not store or read the audit: retry later. This is not a finding about the target.", nil)
	case errors.Is(err, audits.ErrAuditFailed):
		return apierror.Coded(http.StatusServiceUnavailable, "service_audit_failed",
			"The service could not complete the audit: retry later. This is not a finding about the target.", nil)
	}
	return toAPI(err, auditTarget)
}
