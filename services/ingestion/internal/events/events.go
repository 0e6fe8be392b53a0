// Package events is what the ingestion service publishes: the NATS subject and the encoding of each
// message. The use cases decide what to publish; the store writes the messages to the outbox in the
// transaction of the change they report, and the platform's relay sends them to JetStream.
package events

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

// policyChangeType is the Content-Type of a policy change message: a binary proto, named so that a
// consumer reading the stream by hand knows how to decode it.
const policyChangeType = "application/protobuf; proto=ingestion.v1.PolicyChangePublished"

// PolicyChangeSubject is the subject of a published change event of changeType, inside the stream
// POLICY_CHANGES (policy.change.>), without the bus namespace.
func PolicyChangeSubject(changeType string) string { return "policy.change." + changeType }

// PolicyChange is the message of a change event of src that reached AUTO_PUBLISHED (README "Events"):
// an ingestionv1.PolicyChangePublished whose message id, the event id, lets JetStream drop a
// relayed duplicate.
func PolicyChange(src ingest.Source, f ingest.Fact, publishedAt time.Time) (outbox.Event, error) {
	msg := &ingestionv1.PolicyChangePublished{
		ChangeEventId: f.Event.ID.String(), SourceId: src.ID.String(),
		Organization: src.Organization, Program: src.Program, Jurisdiction: src.Jurisdiction,
		PolicyId: f.PolicyID.String(), ChangeType: f.ChangeType, Summary: f.Summary, AffectedCodes: f.AffectedCodes,
		Confidence: f.Event.Confidence, EvidenceQuote: f.EvidenceQuote, EvidenceSide: f.EvidenceSide,
		PublishedAt: timestamppb.New(publishedAt),
	}
	if e := f.Evidence; e != nil {
		msg.PolicyUrl, msg.RawSha256, msg.CanonicalContentHash = e.SourceURL, e.RawSHA256, e.CanonicalContentHash
	}
	payload, err := proto.Marshal(msg)
	if err != nil {
		return outbox.Event{}, err
	}
	return outbox.Event{
		ID: f.Event.ID, Subject: PolicyChangeSubject(f.ChangeType), Payload: payload,
		Headers: map[string]string{"Content-Type": policyChangeType},
	}, nil
}
