package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Webhooks implements verification.v1.WebhookService: watches, webhook endpoints and deliveries of
// the calling organization.
type Webhooks struct {
	verificationv1.UnimplementedWebhookServiceServer
	svc *webhooks.Service
}

// NewWebhooks returns the WebhookService.
func NewWebhooks(svc *webhooks.Service) *Webhooks { return &Webhooks{svc: svc} }

// callerOrganization returns the caller's organization (set by Authenticate).
func callerOrganization(ctx context.Context) (uuid.UUID, error) {
	c, ok := identity.From(ctx)
	if !ok {
		return uuid.Nil, errMissingBearer
	}
	return c.OrganizationID, nil
}

// callerAndID returns the caller's organization and a path id, which names nothing (t's 404) when
// it is not a UUID.
func callerAndID(ctx context.Context, raw string, t target) (uuid.UUID, uuid.UUID, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err := pathID(raw, t)
	return org, id, err
}

// CreateWatch watches a server (201).
func (s *Webhooks) CreateWatch(ctx context.Context, req *verificationv1.CreateWatchRequest) (*verificationv1.CreateWatchResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	body := req.GetWatch()
	w, err := s.svc.CreateWatch(ctx, org, webhooks.NewWatch{
		Namespace: req.GetNamespace(), Name: req.GetName(),
		ChangeTypes: body.GetChangeTypes(), MinRisk: body.GetMinRisk(), EndpointIDs: body.GetEndpointIds(),
	})
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateWatchResponse{Watch: watchToProto(w)}, nil
}

// GetWatch returns the caller's active watch of a server.
func (s *Webhooks) GetWatch(ctx context.Context, req *verificationv1.GetWatchRequest) (*verificationv1.GetWatchResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	w, err := s.svc.GetWatch(ctx, org, req.GetNamespace(), req.GetName())
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	return &verificationv1.GetWatchResponse{Watch: watchToProto(w)}, nil
}

// DeleteWatch archives the caller's watch of a server (204).
func (s *Webhooks) DeleteWatch(ctx context.Context, req *verificationv1.DeleteWatchRequest) (*verificationv1.DeleteWatchResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.svc.ArchiveWatch(ctx, org, req.GetNamespace(), req.GetName()); err != nil {
		return nil, toAPI(err, watchTarget)
	}
	return &verificationv1.DeleteWatchResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// CreateWebhookEndpoint registers an endpoint (201) and shows its secret once.
func (s *Webhooks) CreateWebhookEndpoint(ctx context.Context, req *verificationv1.CreateWebhookEndpointRequest) (*verificationv1.CreateWebhookEndpointResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	body := req.GetEndpoint()
	e, secret, err := s.svc.CreateEndpoint(ctx, org, webhooks.NewEndpoint{
		URL: body.GetUrl(), Description: body.GetDescription(), EventTypes: body.GetEventTypes(),
	})
	if err != nil {
		return nil, toAPI(err, endpointTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateWebhookEndpointResponse{Endpoint: &verificationv1.WebhookEndpointIssuedResponse{
		Id: e.ID.String(), Url: e.URL, Description: e.Description, EventTypes: e.EventTypes, Status: e.Status(),
		Secret: secret, CreatedAt: ts(e.CreatedAt),
	}}, nil
}

// ListWebhookEndpoints lists the caller's endpoints without secrets.
func (s *Webhooks) ListWebhookEndpoints(ctx context.Context, _ *verificationv1.ListWebhookEndpointsRequest) (*verificationv1.ListWebhookEndpointsResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.svc.ListEndpoints(ctx, org)
	if err != nil {
		return nil, toAPI(err, endpointTarget)
	}
	out := &verificationv1.ListWebhookEndpointsResponse{Items: make([]*verificationv1.WebhookEndpointResponse, 0, len(list))}
	for _, e := range list {
		out.Items = append(out.Items, endpointToProto(e))
	}
	return out, nil
}

// DeleteWebhookEndpoint revokes an endpoint (204).
func (s *Webhooks) DeleteWebhookEndpoint(ctx context.Context, req *verificationv1.DeleteWebhookEndpointRequest) (*verificationv1.DeleteWebhookEndpointResponse, error) {
	org, id, err := callerAndID(ctx, req.GetEndpointId(), endpointTarget)
	if err != nil {
		return nil, err
	}
	if err := s.svc.RevokeEndpoint(ctx, org, id); err != nil {
		return nil, toAPI(err, endpointTarget)
	}
	return &verificationv1.DeleteWebhookEndpointResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// EnableWebhookEndpoint re-enables a disabled endpoint.
func (s *Webhooks) EnableWebhookEndpoint(ctx context.Context, req *verificationv1.EnableWebhookEndpointRequest) (*verificationv1.EnableWebhookEndpointResponse, error) {
	org, id, err := callerAndID(ctx, req.GetEndpointId(), endpointTarget)
	if err != nil {
		return nil, err
	}
	e, err := s.svc.EnableEndpoint(ctx, org, id)
	if err != nil {
		return nil, toAPI(err, endpointTarget)
	}
	return &verificationv1.EnableWebhookEndpointResponse{Endpoint: endpointToProto(e)}, nil
}

// GetWebhookDelivery returns a delivery with its attempts.
func (s *Webhooks) GetWebhookDelivery(ctx context.Context, req *verificationv1.GetWebhookDeliveryRequest) (*verificationv1.GetWebhookDeliveryResponse, error) {
	org, id, err := callerAndID(ctx, req.GetDeliveryId(), deliveryTarget)
	if err != nil {
		return nil, err
	}
	d, err := s.svc.GetDelivery(ctx, org, id)
	if err != nil {
		return nil, toAPI(err, deliveryTarget)
	}
	return &verificationv1.GetWebhookDeliveryResponse{Delivery: deliveryToProto(d)}, nil
}

// ListWebhookDeliveries lists an endpoint's deliveries, newest first.
func (s *Webhooks) ListWebhookDeliveries(ctx context.Context, req *verificationv1.ListWebhookDeliveriesRequest) (*verificationv1.ListWebhookDeliveriesResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := deliveryLimit(req.Limit)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetEndpointId(), endpointTarget)
	if err != nil {
		return nil, err
	}
	items, next, err := s.svc.ListDeliveries(ctx, org, id, webhooks.Page{Limit: limit, Cursor: req.GetCursor()})
	if err != nil {
		return nil, toAPI(err, endpointTarget)
	}
	page := &verificationv1.WebhookDeliveryListResponse{Items: make([]*verificationv1.WebhookDeliverySummary, 0, len(items))}
	for _, d := range items {
		page.Items = append(page.Items, deliverySummaryToProto(d))
	}
	if next != "" {
		page.NextCursor = &next
	}
	return &verificationv1.ListWebhookDeliveriesResponse{Deliveries: page}, nil
}

// ReplayWebhookDelivery sends a delivery's event again, under the same event id.
func (s *Webhooks) ReplayWebhookDelivery(ctx context.Context, req *verificationv1.ReplayWebhookDeliveryRequest) (*verificationv1.ReplayWebhookDeliveryResponse, error) {
	org, id, err := callerAndID(ctx, req.GetDeliveryId(), deliveryTarget)
	if err != nil {
		return nil, err
	}
	d, err := s.svc.Replay(ctx, org, id)
	if err != nil {
		return nil, toAPI(err, deliveryTarget)
	}
	return &verificationv1.ReplayWebhookDeliveryResponse{Replay: &verificationv1.WebhookDeliveryReplayResponse{
		DeliveryId: d.ID.String(), ReplayOf: id.String(), EndpointId: d.EndpointID.String(), EventId: d.EventID.String(),
		Status: d.Status, CreatedAt: ts(d.CreatedAt),
	}}, nil
}

// deliveryLimit checks the limit query parameter of a delivery listing (1..100, default 20), with
// FastAPI's messages for its bounds.
func deliveryLimit(limit *int32) (int, error) {
	switch {
	case limit == nil:
		return webhooks.DefaultDeliveryLimit, nil
	case *limit < 1:
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be greater than or equal to 1", Type: "greater_than_equal"})
	case *limit > webhooks.MaxDeliveryLimit:
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be less than or equal to 100", Type: "less_than_equal"})
	}
	return int(*limit), nil
}
