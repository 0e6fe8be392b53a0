// Package events is the verification service's side of NATS JetStream: the subjects it publishes and
// consumes, the encoding of every event (an IntelChange per classified registry change, a
// WebhookDeliveryJob per delivery attempt), and the durable consumer that hands the jobs to the
// webhook use cases. The store writes the events to the outbox with Outbox, so that it knows neither
// their subjects nor their encoding.
package events

import (
	"errors"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Subjects, written without the bus namespace, as the outbox wants them.
const (
	// changeSubjectPrefix starts the subject of each change, which ends with its risk
	// (intel.change.high), so that a consumer can filter by risk.
	changeSubjectPrefix = "intel.change."
	// changeContentType names the payload's message, for consumers outside this service.
	changeContentType = "application/protobuf; proto=verification.v1.IntelChange"
)

// deliverySubject is the subject of the webhook work queue.
var deliverySubject = bus.WebhookDeliveries.Subjects[0]

// ErrMalformedJob is a delivery job without a delivery id or attempt number; its consumer drops it.
var ErrMalformedJob = errors.New("malformed webhook delivery job")

// Outbox encodes the events the store commits with the rows they announce.
type Outbox struct{}

// IntelChange is the event of a classified registry change, published on intel.change.<risk> with
// the change id as its message id, so that a relay that publishes it twice is deduplicated.
func (Outbox) IntelChange(c intelligence.Change) (outbox.Event, error) {
	payload, err := proto.Marshal(&verificationv1.IntelChange{
		ChangeId: c.ID.String(), Namespace: c.Key.Namespace, Name: c.Key.Name,
		FromVersion: c.FromVersion, ToVersion: c.ToVersion, ChangeType: string(c.Type), Risk: string(c.Risk),
		Summary: c.Summary, Field: c.Field, OldValue: c.Old, NewValue: c.New, DetectedAt: timestamppb.New(c.DetectedAt),
	})
	if err != nil {
		return outbox.Event{}, err
	}
	return outbox.Event{
		ID: c.ID, Subject: changeSubjectPrefix + string(c.Risk), Payload: payload,
		Headers: map[string]string{"Content-Type": changeContentType},
	}, nil
}

// DeliveryJob is the job of one delivery attempt on the webhook work queue. Its message id is fresh:
// a job that is enqueued again (a retry, a lost job) must not be dropped as a duplicate; the store's
// claim is what makes a job run at most once per attempt.
func (Outbox) DeliveryJob(deliveryID uuid.UUID, attempt int) (outbox.Event, error) {
	payload, err := proto.Marshal(&verificationv1.WebhookDeliveryJob{DeliveryId: deliveryID.String(), Attempt: int32(attempt)})
	if err != nil {
		return outbox.Event{}, err
	}
	return outbox.Event{Subject: deliverySubject, Payload: payload}, nil
}

// Change reads an IntelChange payload as the webhook matcher's Change: the matcher's queue keeps the
// payloads that IntelChange wrote.
func (Outbox) Change(data []byte) (webhooks.Change, error) {
	var ev verificationv1.IntelChange
	if err := proto.Unmarshal(data, &ev); err != nil {
		return webhooks.Change{}, err
	}
	return webhooks.Change{
		ID: ev.GetChangeId(), Namespace: ev.GetNamespace(), Name: ev.GetName(), FromVersion: ev.GetFromVersion(),
		ToVersion: ev.GetToVersion(), ChangeType: ev.GetChangeType(), Risk: ev.GetRisk(), Summary: ev.GetSummary(),
		Field: ev.GetField(), OldValue: ev.GetOldValue(), NewValue: ev.GetNewValue(), DetectedAt: ev.GetDetectedAt().AsTime(),
	}, nil
}

// decodeJob reads a WebhookDeliveryJob message: ErrMalformedJob unless it names a delivery and an
// attempt of at least 1.
func decodeJob(data []byte) (uuid.UUID, int, error) {
	var job verificationv1.WebhookDeliveryJob
	if err := proto.Unmarshal(data, &job); err != nil {
		return uuid.Nil, 0, err
	}
	id, err := uuid.Parse(job.GetDeliveryId())
	if err != nil || job.GetAttempt() < 1 {
		return uuid.Nil, 0, ErrMalformedJob
	}
	return id, int(job.GetAttempt()), nil
}
