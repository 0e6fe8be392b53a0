package api

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/genproto/googleapis/api/httpbody"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

// DashboardRenderer renders the dashboard page (internal/web.RenderDashboard) with its media type.
type DashboardRenderer struct {
	Render      func(billing.Dashboard) ([]byte, error)
	ContentType string
}

// ReliabilityBilling implements verification.v1.ReliabilityBillingService for the workspace of the
// calling organization key.
type ReliabilityBilling struct {
	verificationv1.UnimplementedReliabilityBillingServiceServer
	svc  *billing.Service
	page DashboardRenderer
}

// NewReliabilityBilling returns the ReliabilityBillingService.
func NewReliabilityBilling(svc *billing.Service, page DashboardRenderer) *ReliabilityBilling {
	return &ReliabilityBilling{svc: svc, page: page}
}

// GetBilling reports the workspace's plan, billing status, limits and usage this month.
func (s *ReliabilityBilling) GetBilling(ctx context.Context, _ *verificationv1.GetBillingRequest) (*verificationv1.GetBillingResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.svc.Status(ctx, org)
	if err != nil {
		return nil, billingToAPI(err)
	}
	return &verificationv1.GetBillingResponse{Billing: billingStatusToProto(st)}, nil
}

// CreateCheckout opens a hosted checkout of the team plan (201).
func (s *ReliabilityBilling) CreateCheckout(ctx context.Context, _ *verificationv1.CreateCheckoutRequest) (*verificationv1.CreateCheckoutResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	co, err := s.svc.Checkout(ctx, org)
	if err != nil {
		return nil, billingToAPI(err)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateCheckoutResponse{Checkout: &verificationv1.CheckoutSessionResponse{
		Id: co.ID, Url: co.URL, Plan: co.Plan, ExpiresAt: ts(co.ExpiresAt),
	}}, nil
}

// GetDashboard renders the workspace's dashboard page.
func (s *ReliabilityBilling) GetDashboard(ctx context.Context, _ *verificationv1.GetDashboardRequest) (*httpbody.HttpBody, error) {
	c, ok := identity.From(ctx)
	if !ok {
		return nil, errMissingBearer
	}
	d, err := s.svc.Dashboard(ctx, c.OrganizationID, c.OrganizationName)
	if err != nil {
		return nil, billingToAPI(err)
	}
	page, err := s.page.Render(d)
	if err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: s.page.ContentType, Data: page}, nil
}

func billingStatusToProto(st billing.Status) *verificationv1.BillingStatusResponse {
	out := &verificationv1.BillingStatusResponse{
		Plan: st.Plan, Status: st.Status, Limits: &verificationv1.BillingLimits{},
		Usage: &verificationv1.BillingUsage{
			PeriodStart: ts(st.Usage.PeriodStart), PeriodEnd: ts(st.Usage.PeriodEnd),
			Targets: int32(min(st.Usage.Targets, 1<<31-1)), Scans: int32(min(st.Usage.Scans, 1<<31-1)),
		},
		CurrentPeriodStart: optionalTS(st.PeriodStart), CurrentPeriodEnd: optionalTS(st.PeriodEnd),
		CheckoutAvailable: st.CheckoutAvailable,
	}
	if n := st.Limits.Targets; n > 0 {
		v := int32(n)
		out.Limits.Targets = &v
	}
	if n := st.Limits.ScansPerMonth; n > 0 {
		v := int32(n)
		out.Limits.ScansPerMonth = &v
	}
	return out
}

// billingToAPI maps billing's errors to what the client sees; the others pass through toAPI.
func billingToAPI(err error) error {
	switch {
	case errors.Is(err, billing.ErrNotConfigured):
		return apierror.Coded(http.StatusServiceUnavailable, "billing_not_configured",
			"Billing is not configured on this deployment: set the VERIFICATION_STRIPE_* settings", nil)
	case errors.Is(err, billing.ErrAlreadySubscribed):
		return apierror.Coded(http.StatusConflict, "already_subscribed",
			"The workspace is already on a paid plan: manage the subscription instead of opening a checkout", nil)
	case errors.Is(err, billing.ErrProcessor):
		return apierror.Coded(http.StatusServiceUnavailable, "payment_processor_unavailable",
			"The payment processor could not open a checkout; retry later", nil)
	case errors.Is(err, billing.ErrSignature):
		return apierror.Coded(http.StatusBadRequest, "invalid_signature", "The Stripe-Signature header does not sign this body", nil)
	case errors.Is(err, billing.ErrStale):
		return apierror.Coded(http.StatusBadRequest, "stale_webhook", "The webhook's signed timestamp is outside the tolerance", nil)
	case errors.Is(err, billing.ErrInvalidEvent):
		return apierror.Coded(http.StatusBadRequest, "invalid_event", "The body is not an event this service can read", nil)
	}
	return toAPI(err, target{})
}
