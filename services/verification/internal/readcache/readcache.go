// Package readcache keeps the rendered, immutable parts of the server state answer (GET
// /v1/intelligence/servers/{namespace}/{name}) in memory, so that a read costs one indexed lookup of
// the server's row and a few appends instead of decoding server.json, building a
// google.protobuf.Struct and marshalling it with protojson every time.
//
// A CPU profile of verification-bench spent about half of the service's time per read on server.json
// (intelligence.DecodeServer, structpb parsing, protojson; about 0.2 ms per document). Everything a snapshot
// determines (fields 1 to 18 and server_json of IntelligenceServerResponse) and every change is
// immutable (the database rejects UPDATE and DELETE on both tables), so an entry keyed by its id is
// never stale and needs no invalidation, only a bound: the cache is an LRU of at most MaxBytes
// (estimated) bytes.
//
// The cache is also the gateway's codec for IntelligenceServerResponse (Codec): a message built by
// Server.Response shares the entry's sub-messages, and the codec writes it as the entry's rendered
// bytes around the few fields that move (first_seen_at, last_seen_at, latest_change, the counters).
// The bytes are exactly those of the gateway's own marshaler (protojson with UseProtoNames and
// EmitDefaultValues, then json.Compact): the parts are rendered by that marshaler, and the tests
// compare whole answers byte for byte. Any message the codec cannot prove was built from an entry
// goes to the gateway's marshaler.
package readcache

import (
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
)

// DefaultMaxBytes bounds the cache: about 18,000 servers of verification-bench's 1 KiB documents
// with their latest change (about 14 KiB by estimate), several times the official registry's count of
// servers today. A cycle through more servers than fit misses on every read (an LRU's worst case: a
// budget of 128 MiB, 9,000 such servers, made the bench's round robin over 10,000 as slow as an
// uncached read), so the budget is meant to hold every current snapshot of the registries synced.
const DefaultMaxBytes = 256 << 20

// maxEntries bounds the LRU's own count; the byte budget is what evicts in practice.
const maxEntries = 1 << 20

// Cache holds Server and Change entries by the id of their snapshot or change. It is safe for
// concurrent use.
type Cache struct {
	entries  *lru.Cache[key, entry]
	maxBytes int64
	bytes    atomic.Int64
}

type kind uint8

const (
	kindServer kind = iota + 1
	kindChange
)

type key struct {
	kind kind
	id   uuid.UUID
}

// entry is a cached *Server or *Change.
type entry interface{ cost() int64 }

// New returns a cache of at most maxBytes (estimated) bytes.
func New(maxBytes int64) *Cache {
	c := &Cache{maxBytes: maxBytes}
	c.entries, _ = lru.NewWithEvict(maxEntries, func(_ key, e entry) { c.bytes.Add(-e.cost()) })
	return c
}

// Bytes is the estimated size of the entries held.
func (c *Cache) Bytes() int64 { return c.bytes.Load() }

// Len is the number of entries held.
func (c *Cache) Len() int { return c.entries.Len() }

func (c *Cache) add(k key, e entry) entry {
	// Two readers that missed together both build an entry; the first one stored wins, so that every
	// message of a snapshot shares one set of sub-messages.
	if prev, ok, _ := c.entries.PeekOrAdd(k, e); ok {
		return prev
	}
	c.bytes.Add(e.cost())
	for c.bytes.Load() > c.maxBytes {
		if _, _, ok := c.entries.RemoveOldest(); !ok {
			break
		}
	}
	return e
}

// Server returns the entry of a snapshot.
func (c *Cache) Server(snapshotID uuid.UUID) (*Server, bool) {
	e, ok := c.entries.Get(key{kindServer, snapshotID})
	if !ok {
		return nil, false
	}
	return e.(*Server), true
}

// AddServer stores the immutable part of a snapshot's server state answer and returns the entry to
// build answers from (an entry another reader stored first, if any). tmpl must have the fields a
// snapshot determines set (1 to 18 and server_json) and no other; the cache owns it from now on, and
// nobody may change it.
func (c *Cache) AddServer(snapshotID uuid.UUID, tmpl *verificationv1.IntelligenceServerResponse) *Server {
	s := &Server{tmpl: tmpl, size: estimate(tmpl)}
	return c.add(key{kindServer, snapshotID}, s).(*Server)
}

// Change returns the entry of a change.
func (c *Cache) Change(changeID uuid.UUID) (*Change, bool) {
	e, ok := c.entries.Get(key{kindChange, changeID})
	if !ok {
		return nil, false
	}
	return e.(*Change), true
}

// AddChange stores a change's message and returns the entry (one another reader stored first, if
// any). The cache owns msg from now on, and nobody may change it.
func (c *Cache) AddChange(changeID uuid.UUID, msg *verificationv1.IntelligenceChange) *Change {
	ch := &Change{msg: msg, size: estimate(msg)}
	return c.add(key{kindChange, changeID}, ch).(*Change)
}

// estimate is an entry's memory. Measured for verification-bench's documents (1 KiB of JSON, 1.2
// KiB of wire format): 9.4 KiB of heap per entry once parsed and rendered, since a Struct is a map of
// Values, each a pointer to a oneof wrapper.
func estimate(m proto.Message) int64 { return int64(8*proto.Size(m) + 1024) }

// rendered is an entry's JSON, produced once, on the codec's first use of the entry.
type rendered struct {
	once sync.Once
	ok   bool
}

// Server is the cached part of one snapshot's server state answer.
type Server struct {
	tmpl *verificationv1.IntelligenceServerResponse
	size int64
	r    rendered
	// head is the JSON of fields 1 to 18 without its closing brace; serverJSON that of server_json
	// (nil when absent).
	head, serverJSON []byte
}

func (s *Server) cost() int64 { return s.size }

// State is what moves between two reads of the same snapshot: the server row's times and counters,
// and its latest change (nil when none).
type State struct {
	FirstSeenAt, LastSeenAt *timestamppb.Timestamp
	LatestChange            *verificationv1.IntelligenceChange
	ChangeCount             int32
	HighRiskChangeCount     int32
}

// Response returns a new answer: the entry's fields (shared, not copied) and st's.
func (s *Server) Response(st State) *verificationv1.IntelligenceServerResponse {
	t := s.tmpl
	return &verificationv1.IntelligenceServerResponse{
		Namespace: t.Namespace, Name: t.Name, FullName: t.FullName, Version: t.Version, Status: t.Status,
		StatusMessage: t.StatusMessage, Title: t.Title, Description: t.Description, WebsiteUrl: t.WebsiteUrl,
		Repository: t.Repository, Packages: t.Packages, Remotes: t.Remotes, IsLatest: t.IsLatest,
		PublishedAt: t.PublishedAt, RegistryUpdatedAt: t.RegistryUpdatedAt, Registry: t.Registry,
		SnapshotId: t.SnapshotId, ContentHash: t.ContentHash,
		FirstSeenAt: st.FirstSeenAt, LastSeenAt: st.LastSeenAt, LatestChange: st.LatestChange,
		ChangeCount: st.ChangeCount, HighRiskChangeCount: st.HighRiskChangeCount,
		ServerJson: t.ServerJson,
	}
}

// builtFrom reports whether m carries exactly the entry's fields: the same values, and the same
// sub-messages (pointers), which nobody changes.
func (s *Server) builtFrom(m *verificationv1.IntelligenceServerResponse) bool {
	t := s.tmpl
	return m.Namespace == t.Namespace && m.Name == t.Name && m.FullName == t.FullName && m.Version == t.Version &&
		m.Status == t.Status && m.StatusMessage == t.StatusMessage && m.Title == t.Title &&
		m.Description == t.Description && m.WebsiteUrl == t.WebsiteUrl && m.Repository == t.Repository &&
		sameSlice(m.Packages, t.Packages) && sameSlice(m.Remotes, t.Remotes) && m.IsLatest == t.IsLatest &&
		m.PublishedAt == t.PublishedAt && m.RegistryUpdatedAt == t.RegistryUpdatedAt && m.Registry == t.Registry &&
		m.SnapshotId == t.SnapshotId && m.ContentHash == t.ContentHash && m.ServerJson == t.ServerJson
}

// sameSlice reports whether a and b are the same slice of the same backing array.
func sameSlice[T any](a, b []*T) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// Change is a cached change message.
type Change struct {
	msg  *verificationv1.IntelligenceChange
	size int64
	r    rendered
	json []byte
}

func (c *Change) cost() int64 { return c.size }

// Message returns the change's message (shared: read only).
func (c *Change) Message() *verificationv1.IntelligenceChange { return c.msg }
