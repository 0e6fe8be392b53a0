package intelligence

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// TimelineEntry is one point of a server's joined timeline: a listing snapshot (a version as a
// registry served it) or a surface observation (a remote URL's live tool surface as an audit listed
// it, recorded when it differs from the URL's previous one). Exactly one is set.
type TimelineEntry struct {
	Snapshot    *Snapshot
	Observation *SurfaceObservation
}

// The entry types of the timeline, as the history answers name them.
const (
	EntryListingVersion     = "listing_version"
	EntrySurfaceObservation = "surface_observation"
)

// Type returns EntryListingVersion or EntrySurfaceObservation.
func (e TimelineEntry) Type() string {
	if e.Observation != nil {
		return EntrySurfaceObservation
	}
	return EntryListingVersion
}

// SurfacePointPrefix marks a diff point that is a surface observation: "surface:<observation id>".
// Any other point is a version.
const SurfacePointPrefix = "surface:"

// TimelineStore is the persistence of the joined timeline. The remote URLs of a server are those any
// of its snapshots lists.
type TimelineStore interface {
	// Timeline pages through the server's snapshots and its remote URLs' observations, newest first
	// (by observed time); a cursor the store did not issue is fault.ErrBadCursor.
	Timeline(ctx context.Context, serverID uuid.UUID, p Page) ([]TimelineEntry, string, error)
	// Observation returns an observation of one of the server's remote URLs with its listing,
	// fault.ErrVersionNotFound otherwise.
	Observation(ctx context.Context, serverID, id uuid.UUID) (SurfaceObservation, error)
	// SnapshotAt returns the server's newest snapshot observed at or before at (its first when none).
	SnapshotAt(ctx context.Context, serverID uuid.UUID, at time.Time) (Snapshot, error)
	// SurfacesAt returns, per remote URL of the server, the newest observation at or before at, with
	// its listing.
	SurfacesAt(ctx context.Context, serverID uuid.UUID, at time.Time) ([]SurfaceObservation, error)
}

// Timeline pages through a server's joined timeline, newest first.
func (r *Reader) Timeline(ctx context.Context, key ServerKey, p Page) ([]TimelineEntry, string, error) {
	id, err := r.serverID(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return r.store.Timeline(ctx, id, p)
}

// SurfaceChange is a classified change of one remote's tool surface between two points.
type SurfaceChange struct {
	FieldChange
	URL               string
	FromObservationID uuid.UUID
	ToObservationID   uuid.UUID
}

// PointDiff is the typed diff between two points of a timeline: the listing's field changes between
// the snapshots in effect at each point (VersionDiff), and the tool-surface changes of each remote
// URL between the observations in effect at each point (a URL not yet observed at one of them is not
// compared).
type PointDiff struct {
	VersionDiff
	// FromObservation and ToObservation are the points themselves when they are observations.
	FromObservation, ToObservation *SurfaceObservation
	Surface                        []SurfaceChange
}

// HighestRisk is the highest risk among both kinds of changes.
func (d PointDiff) HighestRisk() Risk {
	top := HighestRisk(d.Changes)
	for _, s := range d.Surface {
		if s.Risk.rank() > top.rank() {
			top = s.Risk
		}
	}
	return top
}

type point struct {
	snap Snapshot
	obs  *SurfaceObservation
	at   time.Time
}

// DiffPoints compares two points of a server's timeline: each is a version (its newest snapshot; with
// from equal to to, the version's first snapshot against its newest, as DiffVersions) or
// "surface:<observation id>" (that observation, with the listing snapshot in effect when it was
// made). Unknown points are fault.ErrVersionNotFound.
func (r *Reader) DiffPoints(ctx context.Context, key ServerKey, from, to string) (PointDiff, error) {
	id, err := r.serverID(ctx, key)
	if err != nil {
		return PointDiff{}, err
	}
	fp, err := r.point(ctx, id, from, from == to)
	if err != nil {
		return PointDiff{}, err
	}
	tp, err := r.point(ctx, id, to, false)
	if err != nil {
		return PointDiff{}, err
	}
	d := PointDiff{
		VersionDiff:     VersionDiff{Key: key, From: fp.snap, To: tp.snap},
		FromObservation: fp.obs, ToObservation: tp.obs,
	}
	if fp.snap.ID != tp.snap.ID {
		d.Changes = Diff(fp.snap, tp.snap)
	}
	fromS, err := r.surfacesAt(ctx, id, fp)
	if err != nil {
		return PointDiff{}, err
	}
	toS, err := r.surfacesAt(ctx, id, tp)
	if err != nil {
		return PointDiff{}, err
	}
	urls := make([]string, 0, len(toS))
	for u := range toS {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	for _, u := range urls {
		a, ok := fromS[u]
		b := toS[u]
		if !ok || a.ID == b.ID {
			continue
		}
		for _, fc := range SurfaceDiff(a.Listing, b.Listing) {
			d.Surface = append(d.Surface, SurfaceChange{FieldChange: fc, URL: u, FromObservationID: a.ID, ToObservationID: b.ID})
		}
	}
	return d, nil
}

func (r *Reader) point(ctx context.Context, serverID uuid.UUID, p string, firstOfVersion bool) (point, error) {
	if rest, ok := strings.CutPrefix(p, SurfacePointPrefix); ok {
		oid, err := uuid.Parse(rest)
		if err != nil {
			return point{}, fault.ErrVersionNotFound
		}
		o, err := r.store.Observation(ctx, serverID, oid)
		if err != nil {
			return point{}, err
		}
		snap, err := r.store.SnapshotAt(ctx, serverID, o.ObservedAt)
		if err != nil {
			return point{}, err
		}
		return point{snap: snap, obs: &o, at: o.ObservedAt}, nil
	}
	first, latest, err := r.store.VersionSnapshots(ctx, serverID, p)
	if err != nil {
		return point{}, err
	}
	if firstOfVersion {
		latest = first
	}
	return point{snap: latest, at: latest.ObservedAt}, nil
}

// surfacesAt returns the observations in effect at p, by URL; p's own observation for its URL.
func (r *Reader) surfacesAt(ctx context.Context, serverID uuid.UUID, p point) (map[string]SurfaceObservation, error) {
	list, err := r.store.SurfacesAt(ctx, serverID, p.at)
	if err != nil {
		return nil, err
	}
	out := make(map[string]SurfaceObservation, len(list))
	for _, o := range list {
		out[o.URL] = o
	}
	if p.obs != nil {
		out[p.obs.URL] = *p.obs
	}
	return out, nil
}
