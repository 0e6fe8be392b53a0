package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Keys implements scoring.v1.KeyService.
type Keys struct {
	scoringv1.UnimplementedKeyServiceServer
	creds *keys.Service
	trial TrialLimits
}

// TrialWindow is the window of the trial key limits: keys minted in the last hour count.
const TrialWindow = time.Hour

// Reserver records attempts against subjects within a window, or refuses them all when a subject is
// at its limit (the store's ReserveAttempts, shared with the sign-in throttle).
type Reserver interface {
	ReserveAttempts(ctx context.Context, subjects []controlplane.Attempt, window time.Duration) (ids []int64, retryAfter time.Duration, err error)
}

// TrialLimits bound POST /v1/keys/trial: at most PerAddress keys per client address and PerHour
// keys in all within TrialWindow, counted in PostgreSQL so that every replica enforces one bound.
// A nil Store leaves minting unbounded.
type TrialLimits struct {
	Store      Reserver
	PerAddress int
	PerHour    int
	// ProxyHops is SCORING_TRUSTED_PROXY_HOPS: how the client address is read.
	ProxyHops int
}

// NewKeys returns the service.
func NewKeys(creds *keys.Service, trial TrialLimits) *Keys { return &Keys{creds: creds, trial: trial} }

// trialSubjectPrefix namespaces the trial key limit's subjects among the throttle's attempts; the
// client address is stored only as a SHA-256 digest.
const trialSubjectPrefix = "trial-key:"

// reserveTrial counts one trial key against the caller's address and the overall bound, or refuses
// it with 429 and Retry-After.
func (k *Keys) reserveTrial(ctx context.Context) error {
	if k.trial.Store == nil {
		return nil
	}
	addr := clientIP(ctx, k.trial.ProxyHops)
	if addr == "" {
		addr = "unknown"
	}
	digest := sha256.Sum256([]byte(addr))
	_, retry, err := k.trial.Store.ReserveAttempts(ctx, []controlplane.Attempt{
		{Subject: trialSubjectPrefix + "all", Limit: k.trial.PerHour},
		{Subject: trialSubjectPrefix + "addr:" + hex.EncodeToString(digest[:16]), Limit: k.trial.PerAddress},
	}, TrialWindow)
	if err != nil {
		return err
	}
	if retry > 0 {
		secs := setRetryAfter(ctx, max(retry, time.Second))
		return &apierror.Error{Status: http.StatusTooManyRequests, Body: map[string]any{
			"detail":              "Too many trial keys were issued recently; try again later or ask for a key",
			"retry_after_seconds": secs,
		}}
	}
	return nil
}

// IssueTrialKey is POST /v1/keys/trial (201), bounded by the trial limits (429 beyond).
func (k *Keys) IssueTrialKey(ctx context.Context, _ *scoringv1.IssueTrialKeyRequest) (*scoringv1.IssueTrialKeyResponse, error) {
	if err := k.reserveTrial(ctx); err != nil {
		return nil, err
	}
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
