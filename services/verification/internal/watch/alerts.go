package watch

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Alerts delivers the events of runs (watch.alert, watch.recovered) through the organization's
// webhook endpoints: signed, retried, logged and replayable like every webhook delivery.
type Alerts interface {
	// Publish records ev once per ev.Key: the event and one pending delivery to each endpoint of the
	// organization that is neither revoked nor disabled and takes ev.Type, in one transaction. It
	// returns how many deliveries it created (0 for a key published before, or no endpoint).
	Publish(ctx context.Context, ev AlertEvent) (int, error)
}

// AlertEvent is one event of a run.
type AlertEvent struct {
	OrganizationID uuid.UUID
	// Type is EventAlert or EventRecovered.
	Type string
	// Key makes the event idempotent: "watch.alert:<run id>".
	Key string
	// At is the event's timestamp: when the run finished.
	At   time.Time
	Data AlertData
}

// AlertData is the data of a watch.alert or watch.recovered event (README, "Runs, scheduling and
// alerts"). Its fields are camelCase, as the watch API's.
type AlertData struct {
	Watch AlertWatch `json:"watch"`
	// Run is the run that alerted (or recovered).
	Run AlertRun `json:"run"`
	// PreviousRun is the succeeded run it was compared with; null for a watch's first run.
	PreviousRun *AlertRun `json:"previousRun"`
	// Diff holds, for each tool the surface changes name, its definition before and after (null
	// when it did not exist); at most maxDiffTools tools, and none when their definitions would make
	// the payload larger than maxDiffBytes (then DiffTruncated is true).
	Diff          []ToolDiff `json:"diff"`
	DiffTruncated bool       `json:"diffTruncated,omitempty"`
}

// AlertWatch is the watch of an event.
type AlertWatch struct {
	ID        uuid.UUID  `json:"id"`
	TargetURL string     `json:"targetUrl"`
	Evaluator string     `json:"evaluator"`
	PolicyID  *uuid.UUID `json:"policyId"`
}

// AlertRun is a run as an event shows it.
type AlertRun struct {
	ID          uuid.UUID         `json:"id"`
	Trigger     string            `json:"trigger,omitempty"`
	StartedAt   time.Time         `json:"startedAt"`
	FinishedAt  *time.Time        `json:"finishedAt,omitempty"`
	AuditID     *uuid.UUID        `json:"auditId"`
	Verdict     string            `json:"verdict"`
	Score       *int              `json:"score"`
	SurfaceHash string            `json:"surfaceHash"`
	Alert       bool              `json:"alert"`
	Reasons     []string          `json:"reasons"`
	Changes     []json.RawMessage `json:"changes,omitempty"`
}

// ToolDiff is one changed tool, before and after.
type ToolDiff struct {
	Tool   string        `json:"tool"`
	Before *surface.Tool `json:"before"`
	After  *surface.Tool `json:"after"`
}

// Bounds of an event's diff: the tools' definitions come from the audited server.
const (
	maxDiffTools = 20
	maxDiffBytes = 256 << 10
)

// newAlertEvent builds the event of a finished run.
func newAlertEvent(typ string, c Claimed, run Run, prevRun *Run, prev *Observation, cur Observation, changes []surface.Change) AlertEvent {
	data := AlertData{
		Watch: AlertWatch{ID: c.Watch.ID, TargetURL: c.Watch.TargetURL, Evaluator: c.Watch.Evaluator, PolicyID: c.Watch.PolicyID},
		Run:   alertRun(run, true),
		Diff:  []ToolDiff{},
	}
	if prevRun != nil {
		p := alertRun(*prevRun, false)
		data.PreviousRun = &p
	}
	if typ == EventAlert && prev != nil && prev.Listing != nil && cur.Listing != nil {
		data.Diff, data.DiffTruncated = toolDiffs(changes, *prev.Listing, *cur.Listing)
	}
	at := run.StartedAt
	if run.FinishedAt != nil {
		at = *run.FinishedAt
	}
	return AlertEvent{OrganizationID: c.Watch.OrganizationID, Type: typ, Key: typ + ":" + run.ID.String(), At: at.UTC(), Data: data}
}

func alertRun(r Run, withChanges bool) AlertRun {
	a := AlertRun{
		ID: r.ID, Trigger: r.Trigger, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, AuditID: r.AuditID,
		Verdict: r.Verdict, Score: r.Score, SurfaceHash: r.SurfaceHash, Alert: r.Alert, Reasons: r.Reasons,
	}
	if a.Reasons == nil {
		a.Reasons = []string{}
	}
	if withChanges {
		a.Changes = r.Changes
		if a.Changes == nil {
			a.Changes = []json.RawMessage{}
		}
	}
	return a
}

// toolDiffs returns the before and after of each tool named by a change, in the changes' order.
func toolDiffs(changes []surface.Change, before, after surface.Listing) ([]ToolDiff, bool) {
	find := func(l surface.Listing, name string) *surface.Tool {
		for i := range l.Tools {
			if l.Tools[i].Name == name {
				t := l.Tools[i]
				return &t
			}
		}
		return nil
	}
	out := []ToolDiff{}
	var names []string
	size := 0
	for _, c := range changes {
		if slices.Contains(names, c.Item) {
			continue
		}
		b, a := find(before, c.Item), find(after, c.Item)
		if b == nil && a == nil {
			continue // a prompt or resource: the changes name it, there is no tool to show
		}
		names = append(names, c.Item)
		if len(out) == maxDiffTools {
			return out, true
		}
		d := ToolDiff{Tool: c.Item, Before: b, After: a}
		raw, err := json.Marshal(d)
		if err != nil || size+len(raw) > maxDiffBytes {
			return out, true
		}
		size += len(raw)
		out = append(out, d)
	}
	return out, false
}
