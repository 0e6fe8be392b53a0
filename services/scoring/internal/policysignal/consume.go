package policysignal

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
)

// Handler stores and indexes each policy.change message, acknowledging after the insert commits. A
// redelivered event is a no-op (the change-event id is the primary key); a message that cannot be
// decoded is terminated rather than redelivered for ever.
func Handler(st Store, ix *Index, log *slog.Logger) func(context.Context, jetstream.Msg) {
	return func(ctx context.Context, m jetstream.Msg) {
		var ev ingestionv1.PolicyChangePublished
		if err := proto.Unmarshal(m.Data(), &ev); err != nil || ev.GetChangeEventId() == "" || ev.GetOrganization() == "" {
			log.Warn("policy signal: undecodable message dropped", "subject", m.Subject())
			_ = m.Term()
			return
		}
		s := Signal{
			ChangeEventID: ev.GetChangeEventId(), Organization: ev.GetOrganization(), ChangeType: ev.GetChangeType(),
			AffectedCodes: normaliseCodes(ev.GetAffectedCodes()), Summary: ev.GetSummary(), PolicyURL: ev.GetPolicyUrl(),
			Confidence: ev.GetConfidence(), PublishedAt: ev.GetPublishedAt().AsTime(),
		}
		if ev.GetPublishedAt() == nil {
			s.PublishedAt = time.Now().UTC()
		}
		if _, err := st.InsertPolicySignal(ctx, s); err != nil {
			log.Warn("policy signal: store failed; will be redelivered", "change_event_id", s.ChangeEventID, "error", err)
			_ = m.NakWithDelay(5 * time.Second)
			return
		}
		ix.Add(s)
		_ = m.Ack()
		log.Info("policy signal stored", "change_event_id", s.ChangeEventID, "organization", s.Organization, "change_type", s.ChangeType)
	}
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
