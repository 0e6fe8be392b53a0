package intelligence

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Page is one keyset page request: Limit rows after the position Cursor (a next_cursor the store
// issued; empty for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// ChangeFilter selects changes of a feed.
type ChangeFilter struct {
	// ServerID restricts the feed to one server; uuid.Nil means every server.
	ServerID uuid.UUID
	// Type keeps one change type; "" keeps all.
	Type ChangeType
	// HighRiskOnly keeps high-risk changes.
	HighRiskOnly bool
}

// ReadStore is the persistence the reads need. Lookups of a server return fault.ErrServerNotFound and of a
// version fault.ErrVersionNotFound; a cursor the store did not issue is fault.ErrBadCursor.
type ReadStore interface {
	ServerID(ctx context.Context, key ServerKey) (uuid.UUID, error)
	Server(ctx context.Context, key ServerKey) (ServerState, error)
	// ServerHead returns the server's own row (fault.ErrServerNotFound); Snapshot and Change return the
	// immutable rows it points to.
	ServerHead(ctx context.Context, key ServerKey) (ServerHead, error)
	Snapshot(ctx context.Context, id uuid.UUID) (Snapshot, error)
	Change(ctx context.Context, id uuid.UUID) (Change, error)
	// History pages through a server's snapshots, newest first, and returns the next cursor ("" on
	// the last page).
	History(ctx context.Context, serverID uuid.UUID, p Page) ([]Snapshot, string, error)
	// VersionSnapshots returns the first and the newest snapshot of a version (the same one when it
	// has one).
	VersionSnapshots(ctx context.Context, serverID uuid.UUID, version string) (first, latest Snapshot, err error)
	// VersionBefore returns the version of the newest snapshot recorded before version's first one
	// with another version; ok is false when there is none.
	VersionBefore(ctx context.Context, serverID uuid.UUID, version string) (before string, ok bool, err error)
	// Changes pages through a feed, newest first.
	Changes(ctx context.Context, f ChangeFilter, p Page) ([]Change, string, error)
	TimelineStore
}

// HeadCache keeps server heads between reads (readcache.Heads). It is told of every change of a
// server's row; Begin and Add let it refuse a head read before a change it heard of.
type HeadCache interface {
	// Head returns the cached head of key: ok is false when nothing is cached, exists is false when
	// the server is cached as unknown.
	Head(key ServerKey) (head ServerHead, exists, ok bool)
	// Begin returns a token taken before a read of the database, for Add.
	Begin() uint64
	// Add offers what that read found: the head, or (exists false) that the server is unknown.
	Add(token uint64, key ServerKey, head ServerHead, exists bool)
}

// Reader answers the intelligence reads.
type Reader struct {
	store ReadStore
	heads HeadCache
}

// ReaderOption adjusts NewReader.
type ReaderOption func(*Reader)

// WithHeadCache has ServerHead (and the lookups of a server's id) answer from c when it can.
func WithHeadCache(c HeadCache) ReaderOption { return func(r *Reader) { r.heads = c } }

// NewReader returns a Reader.
func NewReader(store ReadStore, opts ...ReaderOption) *Reader {
	r := &Reader{store: store}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Server returns a server's current state.
func (r *Reader) Server(ctx context.Context, key ServerKey) (ServerState, error) {
	if !ValidKey(key) {
		return ServerState{}, fault.ErrServerNotFound
	}
	return r.store.Server(ctx, key)
}

// ServerHead returns a server's own row: the current state without the snapshot and the change it
// points to, which callers that cache them (by id: both are immutable) read with Snapshot and Change.
func (r *Reader) ServerHead(ctx context.Context, key ServerKey) (ServerHead, error) {
	if !ValidKey(key) {
		return ServerHead{}, fault.ErrServerNotFound
	}
	if r.heads == nil {
		return r.store.ServerHead(ctx, key)
	}
	if h, exists, ok := r.heads.Head(key); ok {
		if !exists {
			return ServerHead{}, fault.ErrServerNotFound
		}
		return h, nil
	}
	token := r.heads.Begin()
	h, err := r.store.ServerHead(ctx, key)
	switch {
	case err == nil:
		r.heads.Add(token, key, h, true)
	case errors.Is(err, fault.ErrServerNotFound):
		r.heads.Add(token, key, ServerHead{}, false)
	}
	return h, err
}

// Snapshot returns a snapshot by id (one a ServerHead pointed to).
func (r *Reader) Snapshot(ctx context.Context, id uuid.UUID) (Snapshot, error) {
	return r.store.Snapshot(ctx, id)
}

// Change returns a change by id (one a ServerHead pointed to).
func (r *Reader) Change(ctx context.Context, id uuid.UUID) (Change, error) {
	return r.store.Change(ctx, id)
}

// History pages through a server's snapshots, newest first.
func (r *Reader) History(ctx context.Context, key ServerKey, p Page) ([]Snapshot, string, error) {
	id, err := r.serverID(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return r.store.History(ctx, id, p)
}

// Changes pages through a feed, newest first; with key set, through that server's changes.
func (r *Reader) Changes(ctx context.Context, key *ServerKey, f ChangeFilter, p Page) ([]Change, string, error) {
	if key != nil {
		id, err := r.serverID(ctx, *key)
		if err != nil {
			return nil, "", err
		}
		f.ServerID = id
	}
	return r.store.Changes(ctx, f, p)
}

func (r *Reader) serverID(ctx context.Context, key ServerKey) (uuid.UUID, error) {
	if !ValidKey(key) {
		return uuid.Nil, fault.ErrServerNotFound
	}
	// A cached head gives the id. Only a known server: a row without a snapshot yet has an id but
	// no head.
	if r.heads != nil {
		if h, exists, ok := r.heads.Head(key); ok && exists {
			return h.ID, nil
		}
	}
	return r.store.ServerID(ctx, key)
}

// VersionDiff is the field-by-field diff between two snapshots of a server.
type VersionDiff struct {
	Key     ServerKey
	From    Snapshot
	To      Snapshot
	Changes []FieldChange
}

// DiffVersions compares the newest snapshots of two versions. With from equal to to it compares the
// version's first snapshot with its newest, which shows what changed in place (a deprecation, an
// edit under the same version number).
func (r *Reader) DiffVersions(ctx context.Context, key ServerKey, from, to string) (VersionDiff, error) {
	id, err := r.serverID(ctx, key)
	if err != nil {
		return VersionDiff{}, err
	}
	return r.diff(ctx, id, key, from, to)
}

func (r *Reader) diff(ctx context.Context, id uuid.UUID, key ServerKey, from, to string) (VersionDiff, error) {
	fromFirst, fromLatest, err := r.store.VersionSnapshots(ctx, id, from)
	if err != nil {
		return VersionDiff{}, err
	}
	d := VersionDiff{Key: key, From: fromLatest}
	if from == to {
		d.From, d.To = fromFirst, fromLatest
	} else if _, d.To, err = r.store.VersionSnapshots(ctx, id, to); err != nil {
		return VersionDiff{}, err
	}
	d.Changes = Diff(d.From, d.To)
	return d, nil
}

// MaxCompareItems bounds a batch compare: each item costs up to four indexed reads, so 50 items stay
// well under a second on a loaded database while covering a typical deployment's server list.
const MaxCompareItems = 50

// CompareItem names one comparison. Empty To means the current version; empty From the version
// observed before To (To itself when there is none).
type CompareItem struct {
	Key      ServerKey
	From, To string
}

// CompareResult is one comparison's outcome; Err is fault.ErrServerNotFound or fault.ErrVersionNotFound when it
// failed.
type CompareResult struct {
	Index int
	Item  CompareItem
	Diff  VersionDiff
	Err   error
}

// CompareBatch runs each comparison in order. An item that names an unknown server or version gets
// its own error; any other failure (the database) fails the whole batch.
func (r *Reader) CompareBatch(ctx context.Context, items []CompareItem) ([]CompareResult, error) {
	out := make([]CompareResult, 0, len(items))
	for i, it := range items {
		res := CompareResult{Index: i, Item: it}
		res.Diff, res.Err = r.compare(ctx, &res.Item)
		if res.Err != nil && !errors.Is(res.Err, fault.ErrServerNotFound) && !errors.Is(res.Err, fault.ErrVersionNotFound) {
			return nil, res.Err
		}
		out = append(out, res)
	}
	return out, nil
}

// compare resolves the item's defaults in place and diffs.
func (r *Reader) compare(ctx context.Context, it *CompareItem) (VersionDiff, error) {
	var id uuid.UUID
	if it.To == "" {
		st, err := r.Server(ctx, it.Key)
		if err != nil {
			return VersionDiff{}, err
		}
		id, it.To = st.ID, st.Current.Server.Version
	} else {
		var err error
		if id, err = r.serverID(ctx, it.Key); err != nil {
			return VersionDiff{}, err
		}
	}
	if it.From == "" {
		before, ok, err := r.store.VersionBefore(ctx, id, it.To)
		if err != nil {
			return VersionDiff{}, err
		}
		it.From = it.To
		if ok {
			it.From = before
		}
	}
	return r.diff(ctx, id, it.Key, it.From, it.To)
}
