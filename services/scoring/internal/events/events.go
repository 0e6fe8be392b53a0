// Package events is what the scoring service consumes from NATS: the ingestion service's published
// policy changes (policy.change.<change_type> in the stream POLICY_CHANGES), their decoding, and the
// consumer that hands each to the policy-signal use case. The service publishes no event of its own.
package events

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/bus"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// PolicyConsumer is the durable consumer of policy changes; the service's replicas share it, so
// each event is delivered to one of them.
const PolicyConsumer = "scoring-policy-signals"

// errUndecodable is a message that is not a policy change this service can use.
var errUndecodable = errors.New("not a PolicyChangePublished with a change event id and an organization")

// DecodePolicyChange reads a policy.change message (an ingestion.v1.PolicyChangePublished) as a
// signal. A change without a publication time is taken as published now.
func DecodePolicyChange(data []byte, now time.Time) (policysignal.Signal, error) {
	var ev ingestionv1.PolicyChangePublished
	if err := proto.Unmarshal(data, &ev); err != nil || ev.GetChangeEventId() == "" || ev.GetOrganization() == "" {
		return policysignal.Signal{}, errUndecodable
	}
	s := policysignal.Signal{
		ChangeEventID: ev.GetChangeEventId(), Organization: ev.GetOrganization(), ChangeType: ev.GetChangeType(),
		AffectedCodes: normaliseCodes(ev.GetAffectedCodes()), Summary: ev.GetSummary(), PolicyURL: ev.GetPolicyUrl(),
		Confidence: ev.GetConfidence(), PublishedAt: ev.GetPublishedAt().AsTime(),
	}
	if ev.GetPublishedAt() == nil {
		s.PublishedAt = now.UTC()
	}
	return s, nil
}

// normaliseCodes upper-cases codes so they compare with the claim's normalised codes.
func normaliseCodes(codes []string) []string {
	out := make([]string, 0, len(codes))
	for _, c := range codes {
		if c = strings.ToUpper(strings.TrimSpace(c)); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// PolicyChanges is the durable consumer of every policy change, recording each with signals. It
// acknowledges a message after the signal is stored; a redelivered event is a no-op (the change
// event id is the primary key); a message that cannot be decoded is terminated rather than
// redelivered for ever.
func PolicyChanges(b *bus.Bus, signals *policysignal.Service, log *slog.Logger) *bus.Consumer {
	return &bus.Consumer{Bus: b, Log: log, Stream: bus.PolicyChanges, Concurrency: 2,
		Handle: func(ctx context.Context, m jetstream.Msg) {
			s, err := DecodePolicyChange(m.Data(), time.Now())
			if err != nil {
				log.Warn("policy signal: undecodable message dropped", "subject", m.Subject())
				_ = m.Term()
				return
			}
			if err := signals.Record(ctx, s); err != nil {
				log.Warn("policy signal: store failed; will be redelivered", "change_event_id", s.ChangeEventID, "error", err)
				_ = m.NakWithDelay(5 * time.Second)
				return
			}
			_ = m.Ack()
			log.Info("policy signal stored", "change_event_id", s.ChangeEventID, "organization", s.Organization, "change_type", s.ChangeType)
		},
		Config: jetstream.ConsumerConfig{
			Durable: PolicyConsumer, FilterSubject: b.Subject(bus.PolicyChanges.Subjects[0]),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, DeliverPolicy: jetstream.DeliverAllPolicy,
		}}
}
