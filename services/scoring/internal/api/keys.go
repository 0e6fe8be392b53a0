package api

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Keys implements scoring.v1.KeyService.
type Keys struct {
	scoringv1.UnimplementedKeyServiceServer
	creds *keys.Service
}

// NewKeys returns the service.
func NewKeys(creds *keys.Service) *Keys { return &Keys{creds: creds} }

// IssueTrialKey is POST /v1/keys/trial (201).
func (k *Keys) IssueTrialKey(ctx context.Context, _ *scoringv1.IssueTrialKeyRequest) (*scoringv1.IssueTrialKeyResponse, error) {
	issued, err := k.creds.IssueTrial(ctx)
	if err != nil {
		return nil, err
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.IssueTrialKeyResponse{Key: issuedToProto(issued)}, nil
}

// IssueApiKey is POST /v1/apikeys/issue (201, admin).
func (k *Keys) IssueApiKey(ctx context.Context, req *scoringv1.IssueApiKeyRequest) (*scoringv1.IssueApiKeyResponse, error) {
	issued, err := k.creds.Issue(ctx, req.GetPlan(), req.GetEmail(), req.GetName(), req.GetScopes())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.IssueApiKeyResponse{Key: issuedToProto(issued)}, nil
}

// IssueToken is POST /v1/tokens/issue (201, admin).
func (k *Keys) IssueToken(ctx context.Context, req *scoringv1.IssueTokenRequest) (*scoringv1.IssueTokenResponse, error) {
	tok, err := k.creds.IssueToken(ctx, req.GetSubject(), req.GetScopes(), time.Duration(req.GetTtlSeconds())*time.Second)
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.IssueTokenResponse{Token: &scoringv1.IssuedToken{
		AccessToken: tok.AccessToken, TokenType: "Bearer", ExpiresIn: int32(time.Until(tok.ExpiresAt).Round(time.Second).Seconds()),
		ExpiresAt: timestamppb.New(tok.ExpiresAt), KeyId: tok.KeyID,
	}}, nil
}

func issuedToProto(i keys.Issued) *scoringv1.IssuedKey {
	plan, _ := meter.PlanFor(i.Plan)
	scopes := i.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return &scoringv1.IssuedKey{
		ApiKey: i.Secret, KeyId: i.ID, KeyPrefix: i.Prefix, AccountId: i.AccountID, Plan: i.Plan, Scopes: scopes,
		MonthlyIncludedCalls: count(plan.IncludedCalls), RequestsPerSecond: plan.RatePerSecond, Burst: int32(plan.Burst),
		MaxInFlight: int32(plan.MaxInFlight), CreatedAt: timestamppb.New(i.CreatedAt),
	}
}
