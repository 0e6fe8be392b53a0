package intelligence

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/semver"
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
	// Superseded are stored snapshots that were their server's current one and no longer are: their
	// is_latest is cleared (the one change a snapshot row allows), before the new latest is written.
	Superseded []uuid.UUID
}

// ServerUpdate moves a server's pointers; zero ids keep the stored ones.
type ServerUpdate struct {
	CurrentID      uuid.UUID
	LatestChangeID uuid.UUID
	// AddChanges and AddHighRisk are added to the server's counters.
	AddChanges  int64
	AddHighRisk int64
}

// CompareVersions orders two versions of a server the way the official registry picks its latest:
// by semantic version when both are valid ones, else by publication time; 0 when neither tells
// (equal versions, or no times).
func CompareVersions(a string, aPublished time.Time, b string, bPublished time.Time) int {
	if c, ok := compareSemver(a, b); ok && (c != 0 || a == b) {
		return c
	}
	if a == b || aPublished.IsZero() || bPublished.IsZero() {
		return 0
	}
	return aPublished.Compare(bPublished)
}

// compareSemver compares two versions as semantic versions; ok is false unless both are valid ones.
func compareSemver(a, b string) (c int, ok bool) {
	sa, sb := "v"+a, "v"+b
	if !semver.IsValid(sa) || !semver.IsValid(sb) {
		return 0, false
	}
	return semver.Compare(sa, sb), true
}

// inVersionOrder returns the page's observations grouped by server and, within a server, oldest
// version first (stable: versions that cannot be ordered keep the listing's order). A registry lists
// by name and then version as a string, so 1.0.10 comes before 1.0.9; comparing each version with
// the one before it needs the real order.
func inVersionOrder(obs []Observation) []Observation {
	out := slices.Clone(obs)
	slices.SortStableFunc(out, func(a, b Observation) int {
		return cmp.Or(
			cmp.Compare(a.Server.Key.Namespace, b.Server.Key.Namespace),
			cmp.Compare(a.Server.Key.Name, b.Server.Key.Name),
			CompareVersions(a.Server.Version, a.PublishedAt, b.Server.Version, b.PublishedAt))
	})
	return out
}

// plan decides what a page of observations writes, per server in version order:
//
//   - An observation whose content hash equals the newest snapshot of the same version is already
//     recorded: nothing is written (no duplicate history for the same content).
//   - Otherwise it becomes a snapshot. It becomes the server's current state when the server has none,
//     when the registry marks it isLatest, when it is the current version itself (a status or
//     in-place edit of the current version), or when it is a version seen for the first time that is
//     newer than the current one (and not newer than the version the page marks isLatest): several
//     versions published between two polls each become current in turn, so that each is compared
//     with the version before it.
//   - The change set of a snapshot is Diff(base, snapshot), where base is the current state it
//     replaces, or, for a snapshot of another version, that version's previous snapshot (a version
//     deprecated after its successor shipped). A version seen for the first time that does not become
//     current (history backfill of an older version) has no base and no changes.
//   - Exactly one snapshot per server is latest: the current one. A snapshot written in the page
//     that a later one replaces is written not latest; a stored current one that is replaced is
//     listed in Superseded.
//   - During a registry's first full sync (baseline) snapshots are recorded but no change is: the
//     service is learning the registry, not watching it change, and publishing its whole past as
//     fresh events would flood every consumer.
func plan(registry string, obs []Observation, known Known, baseline bool, now time.Time) (PageWrites, error) {
	w := PageWrites{Servers: map[uuid.UUID]*ServerUpdate{}}
	pageLatest := map[ServerKey]Observation{}
	for _, o := range obs {
		if o.IsLatest {
			pageLatest[o.Server.Key] = o
		}
	}
	written := map[uuid.UUID]int{} // snapshot id -> index in w.Snapshots
	for _, o := range inVersionOrder(obs) {
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
			StatusMessage: o.StatusMessage, ContentHash: hash,
			PublishedAt: o.PublishedAt, UpdatedAt: o.UpdatedAt, ObservedAt: now,
		}
		if seen {
			snap.PreviousID = prev.ID
		}

		up := w.Servers[ks.ID]
		if up == nil {
			up = &ServerUpdate{}
			w.Servers[ks.ID] = up
		}
		var base *Snapshot
		switch {
		case ks.Current == nil || o.IsLatest || ks.Current.Server.Version == o.Server.Version || (!seen && newerRelease(o, ks.Current, pageLatest)):
			base = ks.Current
			snap.IsLatest = true
			if base != nil {
				if i, ok := written[base.ID]; ok {
					w.Snapshots[i].IsLatest = false
				} else if base.IsLatest {
					w.Superseded = append(w.Superseded, base.ID)
				}
			}
			ks.Current = &snap
			up.CurrentID = snap.ID
		case seen:
			base = &prev
		}
		ks.Latest[o.Server.Version] = snap
		written[snap.ID] = len(w.Snapshots)
		w.Snapshots = append(w.Snapshots, snap)
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

// newerRelease reports whether o, a version seen for the first time, is a release after the current
// one that the registry has not skipped: newer than current, and not newer than the version the page
// marks latest (a version published and withdrawn again does not become current over it).
func newerRelease(o Observation, current *Snapshot, pageLatest map[ServerKey]Observation) bool {
	if CompareVersions(o.Server.Version, o.PublishedAt, current.Server.Version, current.PublishedAt) <= 0 {
		return false
	}
	l, ok := pageLatest[o.Server.Key]
	return !ok || CompareVersions(o.Server.Version, o.PublishedAt, l.Server.Version, l.PublishedAt) <= 0
}
