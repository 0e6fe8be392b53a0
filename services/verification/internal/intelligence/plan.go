package intelligence

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ServerVersion names one version of a server listed in a page.
type ServerVersion struct {
	Key     ServerKey
	Version string
}

// Known is what the store holds about the servers of one page, read inside the page's transaction
// with the server rows locked, so that concurrent pages touching the same server take turns.
type Known map[ServerKey]*KnownServer

// KnownServer is one server's stored state.
type KnownServer struct {
	ID uuid.UUID
	// Current is the snapshot of the current state; nil before the server's first snapshot.
	Current *Snapshot
	// Latest holds, for each version listed in the page, its newest snapshot (absent when the version
	// was never seen).
	Latest map[string]Snapshot
}

// PageWrites is what one page adds: snapshots, the changes between them and their predecessors (each
// published as an event), and the server rows' new pointers and counters.
type PageWrites struct {
	Snapshots []Snapshot
	Changes   []Change
	Servers   map[uuid.UUID]*ServerUpdate
}

// ServerUpdate moves a server's pointers; zero ids keep the stored ones.
type ServerUpdate struct {
	CurrentID      uuid.UUID
	LatestChangeID uuid.UUID
	// AddChanges and AddHighRisk are added to the server's counters.
	AddChanges  int64
	AddHighRisk int64
}

// plan decides what a page of observations writes, in listing order:
//
//   - An observation whose content hash equals the newest snapshot of the same version is already
//     recorded: nothing is written (no duplicate history for the same content).
//   - Otherwise it becomes a snapshot. It becomes the server's current state when the server has none,
//     when the registry marks it isLatest, or when it is the current version itself (a status or
//     in-place edit of the current version).
//   - The change set of a snapshot is Diff(base, snapshot), where base is the current state it
//     replaces, or, for a snapshot of another version, that version's previous snapshot (a version
//     deprecated after its successor shipped). A version seen for the first time that does not become
//     current (history backfill) has no base and no changes.
//   - During a registry's first full sync (baseline) snapshots are recorded but no change is: the
//     service is learning the registry, not watching it change, and publishing its whole past as
//     fresh events would flood every consumer.
func plan(registry string, obs []Observation, known Known, baseline bool, now time.Time) (PageWrites, error) {
	w := PageWrites{Servers: map[uuid.UUID]*ServerUpdate{}}
	for _, o := range obs {
		ks := known[o.Server.Key]
		if ks == nil {
			return w, fmt.Errorf("store returned no state for server %s", o.Server.Key)
		}
		hash := ContentHash(o.Server, o.Status)
		prev, seen := ks.Latest[o.Server.Version]
		if seen && prev.ContentHash == hash {
			continue
		}
		id, err := uuid.NewV7()
		if err != nil {
			return w, err
		}
		snap := Snapshot{
			ID: id, ServerID: ks.ID, Registry: registry, Server: o.Server, Status: o.Status,
			StatusMessage: o.StatusMessage, IsLatest: o.IsLatest, ContentHash: hash,
			PublishedAt: o.PublishedAt, UpdatedAt: o.UpdatedAt, ObservedAt: now,
		}
		if seen {
			snap.PreviousID = prev.ID
		}
		ks.Latest[o.Server.Version] = snap
		w.Snapshots = append(w.Snapshots, snap)

		up := w.Servers[ks.ID]
		if up == nil {
			up = &ServerUpdate{}
			w.Servers[ks.ID] = up
		}
		var base *Snapshot
		switch {
		case ks.Current == nil || o.IsLatest || ks.Current.Server.Version == o.Server.Version:
			base = ks.Current
			ks.Current = &snap
			up.CurrentID = snap.ID
		case seen:
			base = &prev
		}
		if base == nil || baseline {
			continue
		}
		for _, fc := range Diff(*base, snap) {
			cid, err := uuid.NewV7()
			if err != nil {
				return w, err
			}
			w.Changes = append(w.Changes, Change{
				FieldChange: fc, ID: cid, ServerID: ks.ID, Key: o.Server.Key,
				FromSnapshotID: base.ID, ToSnapshotID: snap.ID,
				FromVersion: base.Server.Version, ToVersion: snap.Server.Version, DetectedAt: now,
			})
			up.LatestChangeID = cid
			up.AddChanges++
			if fc.Risk == RiskHigh {
				up.AddHighRisk++
			}
		}
	}
	return w, nil
}
