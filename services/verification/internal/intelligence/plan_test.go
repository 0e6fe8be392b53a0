package intelligence

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

func observation(t *testing.T, version, status string, latest bool, edit func(m map[string]any)) Observation {
	t.Helper()
	m := baseServer()
	m["version"] = version
	if edit != nil {
		edit(m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeServer(raw)
	if err != nil {
		t.Fatal(err)
	}
	return Observation{Server: s, Status: status, IsLatest: latest}
}

func knownEmpty() (Known, ServerKey) {
	key := ServerKey{Namespace: "io.example", Name: "weather"}
	return Known{key: {ID: uuid.New(), Latest: map[string]Snapshot{}}}, key
}

func TestPlanRecordsEachContentOnce(t *testing.T) {
	t.Parallel()
	known, _ := knownEmpty()
	o := observation(t, "1.0.0", LifecycleActive, true, nil)
	w, err := plan("r", []Observation{o, o}, known, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Snapshots) != 1 || len(w.Changes) != 0 {
		t.Fatalf("got %d snapshots and %d changes, want 1 and 0", len(w.Snapshots), len(w.Changes))
	}
	// The same content in a later page (the store now knows it) writes nothing.
	w, err = plan("r", []Observation{o}, known, false, time.Now())
	if err != nil || len(w.Snapshots) != 0 {
		t.Fatalf("got %d snapshots (err %v), want none", len(w.Snapshots), err)
	}
}

func TestPlanBaselineRecordsHistoryWithoutChanges(t *testing.T) {
	t.Parallel()
	known, key := knownEmpty()
	obs := []Observation{
		observation(t, "1.0.0", LifecycleActive, false, nil),
		observation(t, "2.0.0", LifecycleActive, true, func(m map[string]any) { remote0(m)["url"] = "https://other.example/mcp" }),
	}
	w, err := plan("r", obs, known, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Snapshots) != 2 || len(w.Changes) != 0 {
		t.Fatalf("got %d snapshots and %d changes, want 2 and 0", len(w.Snapshots), len(w.Changes))
	}
	if got := known[key].Current.Server.Version; got != "2.0.0" {
		t.Errorf("current version: got %s, want the latest 2.0.0", got)
	}
}

func TestPlanClassifiesAgainstTheStateItReplaces(t *testing.T) {
	t.Parallel()
	known, key := knownEmpty()
	if _, err := plan("r", []Observation{
		observation(t, "1.0.0", LifecycleActive, false, nil),
		observation(t, "2.0.0", LifecycleActive, true, nil),
	}, known, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	current := known[key].Current.ID
	// A new latest version is compared with the current one; the old version's deprecation with
	// that version's own previous snapshot, and it does not become current.
	w, err := plan("r", []Observation{
		observation(t, "1.0.0", LifecycleDeprecated, false, nil),
		observation(t, "3.0.0", LifecycleActive, true, func(m map[string]any) { m["description"] = "New" }),
	}, known, false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Changes) != 3 {
		t.Fatalf("got %d changes %+v, want 3", len(w.Changes), w.Changes)
	}
	dep := w.Changes[0]
	if dep.Type != StatusDeprecated || dep.FromVersion != "1.0.0" || dep.ToVersion != "1.0.0" {
		t.Errorf("got %s %s->%s, want status_deprecated 1.0.0->1.0.0", dep.Type, dep.FromVersion, dep.ToVersion)
	}
	for _, c := range w.Changes[1:] {
		if c.FromSnapshotID != current || c.ToVersion != "3.0.0" {
			t.Errorf("got %s from %s to %s, want from the current snapshot to 3.0.0", c.Type, c.FromSnapshotID, c.ToVersion)
		}
	}
	up := w.Servers[known[key].ID]
	if up.AddChanges != 3 || up.AddHighRisk != 1 || up.LatestChangeID != w.Changes[2].ID || up.CurrentID != w.Snapshots[1].ID {
		t.Errorf("got server update %+v, want 3 changes, 1 high, the last change and the 3.0.0 snapshot", up)
	}
	if w.Snapshots[0].PreviousID == uuid.Nil {
		t.Error("the deprecated 1.0.0 snapshot does not point at the 1.0.0 snapshot it follows")
	}
}
