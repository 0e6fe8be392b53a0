package events_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/events"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

func TestPolicyChange(t *testing.T) {
	t.Parallel()
	src := ingest.Source{ID: uuid.New(), Organization: "Acme Health Plan", Program: "Commercial", Jurisdiction: "US-CA"}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fact := func(evidence *ingest.EvidenceSpan) ingest.Fact {
		return ingest.Fact{
			ID: uuid.New(), PolicyID: uuid.New(), ChangeType: "code_added", Summary: "CPT 72148 added",
			AffectedCodes: []string{"72148"}, EvidenceQuote: "CPT 72148", EvidenceSide: "current", Evidence: evidence,
			Event: ingest.ChangeEvent{ID: uuid.New(), Confidence: 0.97},
		}
	}
	for _, tc := range []struct {
		name                string
		fact                ingest.Fact
		wantURL, wantRawSHA string
	}{
		{"with its evidence span", fact(&ingest.EvidenceSpan{SourceURL: "https://docs.example/p", RawSHA256: "ab12", CanonicalContentHash: "cd34"}),
			"https://docs.example/p", "ab12"},
		{"without one", fact(nil), "", ""},
	} {
		ev, err := events.PolicyChange(src, tc.fact, at)
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID != tc.fact.Event.ID || ev.Subject != "policy.change.code_added" ||
			ev.Headers["Content-Type"] != "application/protobuf; proto=ingestion.v1.PolicyChangePublished" {
			t.Errorf("%s: id %s subject %s headers %v, want the event id, policy.change.code_added and the proto type", tc.name, ev.ID, ev.Subject, ev.Headers)
		}
		var msg ingestionv1.PolicyChangePublished
		if err := proto.Unmarshal(ev.Payload, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.GetChangeEventId() != tc.fact.Event.ID.String() || msg.GetSourceId() != src.ID.String() || msg.GetOrganization() != "Acme Health Plan" ||
			msg.GetPolicyId() != tc.fact.PolicyID.String() || msg.GetConfidence() != 0.97 || !msg.GetPublishedAt().AsTime().Equal(at) ||
			msg.GetPolicyUrl() != tc.wantURL || msg.GetRawSha256() != tc.wantRawSHA {
			t.Errorf("%s: payload %v", tc.name, &msg)
		}
	}
}
