package api

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
)

// Billing implements scoring.v1.BillingService.
type Billing struct {
	scoringv1.UnimplementedBillingServiceServer
	billing *billing.Service
}

// NewBilling returns the service.
func NewBilling(b *billing.Service) *Billing { return &Billing{billing: b} }

// CreateCheckoutSession is POST /v1/billing/checkout-session (201): the bearer, a trial key, asks to
// upgrade its own account.
func (b *Billing) CreateCheckoutSession(ctx context.Context, _ *scoringv1.CreateCheckoutSessionRequest) (*scoringv1.CreateCheckoutSessionResponse, error) {
	sess, err := b.billing.CheckoutForKey(ctx, callerFrom(ctx))
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.CreateCheckoutSessionResponse{CheckoutSession: sessionToProto(sess)}, nil
}

// CreateAdminCheckoutSession is POST /v1/billing/checkout/session (201, admin).
func (b *Billing) CreateAdminCheckoutSession(ctx context.Context, req *scoringv1.CreateAdminCheckoutSessionRequest) (*scoringv1.CreateAdminCheckoutSessionResponse, error) {
	sess, err := b.billing.CheckoutForAccount(ctx, billing.Selector{Email: req.GetEmail(), KeyID: req.GetKeyId()})
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusCreated)
	return &scoringv1.CreateAdminCheckoutSessionResponse{CheckoutSession: sessionToProto(sess)}, nil
}

// GetBillingAccountStatus is GET /v1/billing/accounts/{email}/status (admin).
func (b *Billing) GetBillingAccountStatus(ctx context.Context, req *scoringv1.GetBillingAccountStatusRequest) (*scoringv1.GetBillingAccountStatusResponse, error) {
	st, err := b.billing.AccountStatus(ctx, req.GetEmail())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.BillingAccountStatus{
		Email: st.Email, AccountId: st.ID, Plan: st.Plan, SubscriptionState: st.SubscriptionState(),
		RenewalDate: optionalTime(st.CurrentPeriodEnd), CancelAtPeriodEnd: st.CancelAtPeriodEnd,
		LastPaymentResult: st.LastPaymentResult, LastPaymentAt: optionalTime(st.LastPaymentAt),
		CustomerId: st.CustomerID, SubscriptionId: st.SubscriptionID, ApiKeyStatus: st.KeyStatus(),
		ApiKeys: make([]*scoringv1.BillingAccountKey, 0, len(st.Keys)),
	}
	if out.Email == "" {
		out.Email = st.CustomerEmail
	}
	if out.LastPaymentResult == "" {
		out.LastPaymentResult = "none"
	}
	for _, k := range st.Keys {
		status := "active"
		if k.RevokedAt != nil {
			status = "revoked"
		}
		out.ApiKeys = append(out.ApiKeys, &scoringv1.BillingAccountKey{
			KeyId: k.ID, KeyPrefix: k.Prefix, Kind: k.Kind, Name: k.Name, Status: status,
			CreatedAt: timestamppb.New(k.CreatedAt), RevokedAt: optionalTime(k.RevokedAt),
		})
	}
	return &scoringv1.GetBillingAccountStatusResponse{Status: out}, nil
}

func sessionToProto(s billing.Session) *scoringv1.CheckoutSession {
	return &scoringv1.CheckoutSession{
		CheckoutSessionId: s.ID, Url: s.URL, ExpiresAt: timestamppb.New(s.ExpiresAt), AccountId: s.AccountID,
		KeyId: s.KeyID, KeyPrefix: s.KeyPrefix, Email: s.Email, Plan: s.Plan, TargetPlan: billing.PlanPaid,
	}
}

// optionalTime is a timestamp, or nil (absent from the JSON) for no time.
func optionalTime(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
