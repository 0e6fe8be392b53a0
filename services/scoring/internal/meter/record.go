package meter

import (
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Record is a request record as the meter holds it until it is written: a RequestRecord without a
// single pointer. At 7,500 requests/s a second of buffered records was 1.5 MB of the service's 8 MB
// live heap, strings and a map of strings that every garbage collection had to trace, and marking is
// what holds up requests on a replica with one processor (docs/performance.md). A slice and a map of Records are never scanned. Make one with NewRecord.
type Record struct {
	id                              recordKey
	keyID, accountID                uuid.UUID
	scoredAt                        int64 // Unix nanoseconds
	endpoint, routeID, modelVersion label
}

// recordKey is a request id: "<uuid>", or "<uuid>.<item>" for a batch item.
type recordKey struct {
	base uuid.UUID
	item int32 // -1 when the id has no item
}

// NewRecord checks r the way the database would and packs it. A request id is the service's: a UUID
// in canonical (lowercase, hyphenated) form, followed for a batch item by "." and the item's index.
// Key and account ids are UUIDs; the endpoint is one of the Endpoint constants; route id and model
// version are non-empty, and at most maxLabels distinct values of them are ever held.
func NewRecord(r RequestRecord) (Record, error) {
	var (
		rec    Record
		ok     bool
		intErr error
	)
	if rec.id, ok = parseRequestID(r.RequestID); !ok {
		return Record{}, errRequestID
	}
	if rec.keyID, ok = parseUUID(r.KeyID); !ok {
		return Record{}, errKeyID
	}
	if rec.accountID, ok = parseUUID(r.AccountID); !ok {
		return Record{}, errAccountID
	}
	switch {
	case r.RouteID == "":
		return Record{}, errRouteID
	case r.ModelVersion == "":
		return Record{}, errModelVersion
	case r.ScoredAt.IsZero():
		return Record{}, errScoredAt
	}
	switch r.Endpoint {
	case EndpointDenial, EndpointPriorAuth, EndpointReimbursement:
	default:
		return Record{}, errEndpoint
	}
	rec.scoredAt = r.ScoredAt.UnixNano()
	if rec.endpoint, intErr = labels.intern(r.Endpoint); intErr != nil {
		return Record{}, intErr
	}
	if rec.routeID, intErr = labels.intern(r.RouteID); intErr != nil {
		return Record{}, intErr
	}
	if rec.modelVersion, intErr = labels.intern(r.ModelVersion); intErr != nil {
		return Record{}, intErr
	}
	return rec, nil
}

var (
	errRequestID    = errors.New("request id is not a UUID, or a UUID and a batch item's index")
	errKeyID        = errors.New("key id is not a UUID")
	errAccountID    = errors.New("account id is not a UUID")
	errRouteID      = errors.New("empty route id")
	errModelVersion = errors.New("empty model version")
	errScoredAt     = errors.New("zero scored_at")
	errEndpoint     = errors.New("unknown endpoint")
)

// AppendRequestID appends the record's request id to b.
func (r *Record) AppendRequestID(b []byte) []byte {
	b = appendUUID(b, r.id.base)
	if r.id.item >= 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(r.id.item), 10)
	}
	return b
}

// RequestID is the record's request id, as it was given.
func (r *Record) RequestID() string {
	var buf [48]byte // a UUID, a dot and an int32
	return string(r.AppendRequestID(buf[:0]))
}

// KeyID is the id of the key that made the call.
func (r *Record) KeyID() uuid.UUID { return r.keyID }

// AccountID is the id of the key's account.
func (r *Record) AccountID() uuid.UUID { return r.accountID }

// Endpoint is the workflow the call scored, as feedback names it.
func (r *Record) Endpoint() string { return r.endpoint.String() }

// RouteID is the telemetry route id of the call.
func (r *Record) RouteID() string { return r.routeID.String() }

// ModelVersion is the model_version of the response.
func (r *Record) ModelVersion() string { return r.modelVersion.String() }

// ScoredAt is the scored_at of the response, in UTC.
func (r *Record) ScoredAt() time.Time { return time.Unix(0, r.scoredAt).UTC() }

// parseRequestID reads "<uuid>" or "<uuid>.<index>" in the one form that formats back to the same
// string: a lowercase hyphenated UUID and a decimal index without a sign or leading zeros.
func parseRequestID(s string) (recordKey, bool) {
	if len(s) < 36 {
		return recordKey{}, false
	}
	id, ok := parseUUID(s[:36])
	var canon [36]byte
	if !ok || string(appendUUID(canon[:0], id)) != s[:36] {
		return recordKey{}, false
	}
	rest := s[36:]
	if rest == "" {
		return recordKey{id, -1}, true
	}
	digits := rest[1:]
	if rest[0] != '.' || digits == "" || (digits[0] == '0' && len(digits) > 1) || digits[0] == '+' || digits[0] == '-' {
		return recordKey{}, false
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return recordKey{}, false
	}
	return recordKey{id, int32(n)}, true
}

// appendUUID appends u in canonical form; uuid.UUID.String allocates the string it returns.
func appendUUID(b []byte, u uuid.UUID) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return append(b, buf[:]...)
}

// label stands for one of the few strings a record repeats (endpoints, route ids, model versions),
// so that a Record holds a number instead of a string.
type label uint16

// maxLabels bounds the distinct strings labels keeps for the process's life. The service has three
// endpoints, a handful of route ids and one model version per workflow and pin; a caller passing
// thousands of distinct values has a bug, and its records are refused rather than kept forever.
const maxLabels = 1024

// labels is the process's table: a record packed by one meter reads back anywhere.
var labels = newLabelTable()

// labelTable interns strings. Reads go through an immutable snapshot, without a lock: the meter packs
// every call's record and the store unpacks a whole batch.
type labelTable struct {
	mu  sync.Mutex // serialises additions
	cur atomic.Pointer[labelSet]
}

type labelSet struct {
	names []string
	index map[string]label
}

func newLabelTable() *labelTable {
	t := &labelTable{}
	t.cur.Store(&labelSet{index: map[string]label{}})
	return t
}

var errTooManyLabels = errors.New("too many distinct endpoints, route ids and model versions")

func (t *labelTable) intern(s string) (label, error) {
	if l, ok := t.cur.Load().index[s]; ok {
		return l, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.cur.Load()
	if l, ok := cur.index[s]; ok {
		return l, nil
	}
	if len(cur.names) >= maxLabels {
		return 0, errTooManyLabels
	}
	l := label(len(cur.names))
	next := &labelSet{names: append(slices.Clip(cur.names), s), index: maps.Clone(cur.index)}
	next.index[s] = l
	t.cur.Store(next)
	return l, nil
}

func (l label) String() string { return labels.cur.Load().names[l] }
