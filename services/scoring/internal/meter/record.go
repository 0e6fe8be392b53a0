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
// what holds up requests on a replica with one processor (services/scoring/README.md, "Performance",
// session 11). A slice and a map of Records are never scanned. Make one with NewRecord.
type Record struct {
	requestID, keyID, accountID uuid.UUID
	// item is a batch item's index in its request id ("<uuid>.<item>"), or -1.
	item                            int32
	scoredAt                        int64 // Unix nanoseconds
	endpoint, routeID, modelVersion label
}

// recordKey identifies a pending record by its request id.
type recordKey struct {
	id   uuid.UUID
	item int32
}

func (r *Record) key() recordKey { return recordKey{r.requestID, r.item} }

// NewRecord checks r the way the database would and packs it. A request id is the service's: a UUID
// in canonical (lowercase, hyphenated) form, followed for a batch item by "." and the item's index.
// Key and account ids are UUIDs; the endpoint is one of the Endpoint constants; route id and model
// version are non-empty, and at most maxLabels distinct values of them are ever held.
func NewRecord(r RequestRecord) (Record, error) {
	requestID, item, ok := parseRequestID(r.RequestID)
	switch {
	case !ok:
		return Record{}, errRequestID
	case !isUUID(r.KeyID):
		return Record{}, errKeyID
	case !isUUID(r.AccountID):
		return Record{}, errAccountID
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
	endpoint, err1 := labels.intern(r.Endpoint)
	route, err2 := labels.intern(r.RouteID)
	version, err3 := labels.intern(r.ModelVersion)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Record{}, err
	}
	// isUUID has checked both ids, so Parse cannot fail.
	keyID, _ := uuid.Parse(r.KeyID)
	accountID, _ := uuid.Parse(r.AccountID)
	return Record{
		requestID: requestID, item: item, keyID: keyID, accountID: accountID, scoredAt: r.ScoredAt.UnixNano(),
		endpoint: endpoint, routeID: route, modelVersion: version,
	}, nil
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
	b = appendUUID(b, r.requestID)
	if r.item >= 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(r.item), 10)
	}
	return b
}

// RequestID is the record's request id, as it was given.
func (r *Record) RequestID() string { return string(r.AppendRequestID(make([]byte, 0, 48))) }

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
func parseRequestID(s string) (uuid.UUID, int32, bool) {
	if len(s) < 36 {
		return uuid.UUID{}, 0, false
	}
	id, err := uuid.Parse(s[:36])
	if err != nil {
		return uuid.UUID{}, 0, false
	}
	var canon [36]byte
	if string(appendUUID(canon[:0], id)) != s[:36] {
		return uuid.UUID{}, 0, false
	}
	rest := s[36:]
	if rest == "" {
		return id, -1, true
	}
	digits := rest[1:]
	if rest[0] != '.' || digits == "" || (digits[0] == '0' && len(digits) > 1) || digits[0] == '+' || digits[0] == '-' {
		return uuid.UUID{}, 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return uuid.UUID{}, 0, false
	}
	return id, int32(n), true
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
