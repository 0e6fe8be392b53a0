package api

import (
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

func optionalTS(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func optionalID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func watchToProto(w webhooks.Watch) *verificationv1.WatchResponse {
	ids := make([]string, 0, len(w.Filters.EndpointIDs))
	for _, id := range w.Filters.EndpointIDs {
		ids = append(ids, id.String())
	}
	return &verificationv1.WatchResponse{
		Id: w.ID.String(), Namespace: w.Namespace, Name: w.Name, State: w.State, CreatedAt: ts(w.CreatedAt),
		Filters: &verificationv1.WatchFilters{ChangeTypes: w.Filters.ChangeTypes, MinRisk: w.Filters.MinRisk, EndpointIds: ids},
	}
}

func endpointToProto(e webhooks.Endpoint) *verificationv1.WebhookEndpointResponse {
	return &verificationv1.WebhookEndpointResponse{
		Id: e.ID.String(), Url: e.URL, Description: e.Description, EventTypes: e.EventTypes, Status: e.Status(),
		DisabledReason: e.DisabledReason, DisabledAt: optionalTS(e.DisabledAt),
		ConsecutiveFailures: int32(e.ConsecutiveFailures), CreatedAt: ts(e.CreatedAt),
	}
}

func deliveryToProto(d webhooks.Delivery) *verificationv1.WebhookDeliveryResponse {
	out := &verificationv1.WebhookDeliveryResponse{
		Id: d.ID.String(), EndpointId: d.EndpointID.String(), EventId: d.EventID.String(), EventType: d.EventType,
		ChangeId: d.ChangeID, Status: d.Status, FailureReason: d.FailureReason, AttemptCount: int32(d.AttemptCount),
		Attempts: make([]*verificationv1.WebhookAttempt, 0, len(d.Attempts)), NextAttemptAt: optionalTS(d.NextAttemptAt),
		ReplayOf: optionalID(d.ReplayOf), CreatedAt: ts(d.CreatedAt), UpdatedAt: ts(d.UpdatedAt),
	}
	for _, a := range d.Attempts {
		out.Attempts = append(out.Attempts, &verificationv1.WebhookAttempt{
			Attempt: int32(a.Attempt), StatusCode: int32(a.StatusCode), LatencyMs: a.LatencyMS, Error: webhooks.PublicAttemptError(a.Error),
			ResponseExcerpt: a.ResponseExcerpt, StartedAt: ts(a.StartedAt), FinishedAt: ts(a.FinishedAt),
		})
	}
	return out
}

func deliverySummaryToProto(d webhooks.Delivery) *verificationv1.WebhookDeliverySummary {
	return &verificationv1.WebhookDeliverySummary{
		Id: d.ID.String(), EndpointId: d.EndpointID.String(), EventId: d.EventID.String(), EventType: d.EventType,
		ChangeId: d.ChangeID, Status: d.Status, FailureReason: d.FailureReason, AttemptCount: int32(d.AttemptCount),
		LastStatusCode: int32(d.LastStatusCode), NextAttemptAt: optionalTS(d.NextAttemptAt),
		ReplayOf: optionalID(d.ReplayOf), CreatedAt: ts(d.CreatedAt), UpdatedAt: ts(d.UpdatedAt),
	}
}
