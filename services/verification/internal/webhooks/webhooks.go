// Package webhooks delivers registry changes to the organizations that watch the changed server: it
// holds watches and webhook endpoints, matches each change against the watches, and delivers the
// resulting events with Standard Webhooks signatures, retrying failures on a schedule kept in
// PostgreSQL. It declares the storage it needs (Store) and the server catalogue it consults
// (ServerCatalog); transport and messaging live elsewhere (internal/api, internal/events).
package webhooks

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// EventTypeIntelChange is the type of the only event kind: a classified registry change.
const EventTypeIntelChange = "intel.change"

// Delivery statuses.
const (
	// StatusPending: an attempt is queued or a retry is scheduled.
	StatusPending = "pending"
	// StatusSucceeded: a receiver answered 2xx.
	StatusSucceeded = "succeeded"
	// StatusFailed: the delivery stopped before its attempts ran out (see the Reason constants).
	StatusFailed = "failed"
	// StatusExhausted: every attempt failed.
	StatusExhausted = "exhausted"
)

// Why a delivery failed early.
const (
	ReasonEndpointGone     = "endpoint_gone"
	ReasonEndpointDisabled = "endpoint_disabled"
	ReasonEndpointRevoked  = "endpoint_revoked"
)

// Why an endpoint was disabled.
const (
	// DisabledGone: the receiver answered 410 Gone, which Standard Webhooks reserves for "stop sending".
	DisabledGone = "gone"
	// DisabledFailing: Config.DisableAfter deliveries in a row exhausted their attempts.
	DisabledFailing = "failing"
)

// ServerCatalog tells whether the registry sync knows a server. The verification service backs it with
// the registry store; tests back it with a map.
type ServerCatalog interface {
	Exists(ctx context.Context, namespace, name string) (bool, error)
}

// Endpoint is a registered webhook receiver. Its secret is never part of this type: only the worker's
// Claim carries it.
type Endpoint struct {
	ID                  uuid.UUID
	OrganizationID      uuid.UUID
	URL                 string
	Description         string
	EventTypes          []string
	ConsecutiveFailures int
	DisabledAt          *time.Time
	DisabledReason      string
	CreatedAt           time.Time
}

// Status is active or disabled.
func (e Endpoint) Status() string {
	if e.DisabledAt != nil {
		return "disabled"
	}
	return "active"
}

// Filters narrow the changes a watch delivers.
type Filters struct {
	// ChangeTypes keeps only these change types; empty keeps all.
	ChangeTypes []string
	// MinRisk is low, medium or high.
	MinRisk string
	// EndpointIDs limits delivery to these endpoints; empty means every endpoint of the organization.
	EndpointIDs []uuid.UUID
}

// Watch is an organization's subscription to one server's changes.
type Watch struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Namespace      string
	Name           string
	State          string
	Filters        Filters
	CreatedAt      time.Time
}

// Change is one classified registry change: the IntelChange event of DESIGN.md "Events".
type Change struct {
	ID          string
	Namespace   string
	Name        string
	FromVersion string
	ToVersion   string
	ChangeType  string
	Risk        string
	Summary     string
	Field       string
	OldValue    string
	NewValue    string
	DetectedAt  time.Time
}

// Event is what receivers get for a change: an id (the webhook-id) and the exact body.
type Event struct {
	ID       uuid.UUID
	ChangeID string
	Type     string
	Payload  []byte
}

// Delivery is one event sent (or to be sent) to one endpoint.
type Delivery struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	EndpointID     uuid.UUID
	EventID        uuid.UUID
	EventType      string
	ChangeID       string
	Status         string
	FailureReason  string
	AttemptCount   int
	LastStatusCode int
	NextAttemptAt  *time.Time
	ReplayOf       *uuid.UUID
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Attempts is filled by GetDelivery only.
	Attempts []Attempt
}

// Attempt is the immutable record of one POST.
type Attempt struct {
	Attempt         int
	StatusCode      int
	LatencyMS       int64
	Error           string
	ResponseExcerpt string
	StartedAt       time.Time
	FinishedAt      time.Time
}

// Page selects a page of a listing.
type Page struct {
	Limit  int
	Cursor string
}
