package meter

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Sink is where the meter persists usage and request records (store.Store in the service).
type Sink interface {
	// WriteBatch applies the batch in one transaction: every usage delta is added to its counter and
	// every request record is inserted, or nothing is. A batch ID is applied at most once: writing an
	// ID that was already applied (a retry after an error that hid a successful commit) changes
	// nothing and returns nil. A request record whose RequestID already exists is skipped.
	WriteBatch(ctx context.Context, b Batch) error
	// Usage returns the persisted number of calls of a key in a period ("2026-11"), 0 when none.
	Usage(ctx context.Context, keyID, period string) (int64, error)
}

// Batch is one write of the meter: everything that was pending when a flush began.
type Batch struct {
	// ID identifies the batch across retries (a UUID), so that a write whose outcome was unknown is
	// not counted twice.
	ID string
	// Usage holds one delta per key and period.
	Usage []UsageDelta
	// Records are the request records of the billed calls, for feedback to find.
	Records []Record
}

// UsageDelta is a number of calls to add to a key's counter for a period.
type UsageDelta struct {
	KeyID  string // UUID of the API key
	Period string // calendar month UTC, "2026-11"
	Calls  int64
}

// RequestRecord is the durable trace of one scoring response: feedback accepts a request_id only when
// its record exists, belongs to the caller and names the same endpoint.
type RequestRecord struct {
	RequestID    string    // the x-request-id of the response
	KeyID        string    // UUID of the API key that made the call
	AccountID    string    // UUID of the key's account
	Endpoint     string    // EndpointDenial, EndpointPriorAuth or EndpointReimbursement
	RouteID      string    // telemetry route id: unified_score, denial_score, prior_auth_predict, reimbursement_estimate, ...
	ModelVersion string    // the model_version of the response
	ScoredAt     time.Time // the scored_at of the response
}

// Endpoints: the workflow a call scored, as feedback names it.
const (
	EndpointDenial        = "denial"
	EndpointPriorAuth     = "prior_auth"
	EndpointReimbursement = "reimbursement"
)

// parseUUID accepts the 36-character hyphenated form only: uuid.Parse also takes forms (urn:uuid:)
// that PostgreSQL's uuid type rejects.
func parseUUID(s string) (uuid.UUID, bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(s)
	return u, err == nil
}
