package webhooks

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Store persists watches, endpoints and deliveries. Lookups scoped to an organization return
// fault.ErrNotFound for a row of another organization, so that nobody learns another's ids exist. Methods
// that enqueue a delivery job write it to the outbox in the same transaction as the delivery.
type Store interface {
	// CreateEndpoint stores e with its secret unless the organization already has limit endpoints that
	// are not revoked (fault.ErrEndpointLimit).
	CreateEndpoint(ctx context.Context, e Endpoint, secret string, limit int) (Endpoint, error)
	// ListEndpoints lists the organization's endpoints that are not revoked, oldest first.
	ListEndpoints(ctx context.Context, organizationID uuid.UUID) ([]Endpoint, error)
	// RevokeEndpoint revokes an endpoint; an unknown or revoked one is fault.ErrNotFound.
	RevokeEndpoint(ctx context.Context, organizationID, id uuid.UUID) error
	// EnableEndpoint clears the disabled state and the failure count.
	EnableEndpoint(ctx context.Context, organizationID, id uuid.UUID) (Endpoint, error)
	// MissingEndpoints returns those of ids that are not endpoints of the organization (or are revoked).
	MissingEndpoints(ctx context.Context, organizationID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error)

	// CreateWatch stores w unless the organization already has a watch of the server that is not
	// archived (*fault.WatchExistsError) or limit active watches (fault.ErrWatchLimit).
	CreateWatch(ctx context.Context, w Watch, limit int) (Watch, error)
	// GetWatch returns the organization's active watch of a server.
	GetWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) (Watch, error)
	// ArchiveWatch archives the organization's watch of a server.
	ArchiveWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) error

	// MatchNext takes the oldest change of the matcher's queue that no other matcher holds and, in one
	// transaction, removes it and, unless its id was handled before, stores the event that event
	// builds for it and one pending delivery for each endpoint whose organization's watch matches it,
	// claimed for its first attempt. It calls queued once the change is taken if other changes were
	// queued after it, and send with the claims once they are known; send starts the first attempts
	// and returns a function that waits for them and returns those that ended, whose outcomes are
	// recorded in the same transaction. The others are stored leased for lease (as ClaimDelivery
	// would), until their own RecordOutcome. found is false when the queue is empty. A change that
	// can never be handled (undecodable, or refused by event) is removed with an error wrapping
	// ErrChangeDropped. A delivery whose lease runs out without an outcome is due, so that EnqueueDue
	// enqueues its job.
	MatchNext(ctx context.Context, queued func(), event func(Change) (Event, error), lease time.Duration, send func([]Claim) func() []Attempted) (found bool, err error)
	// RecordEvent stores an organization's own event (ev.ChangeID is its key) and one pending
	// delivery (with its job) for each endpoint of the organization that is neither revoked nor
	// disabled and takes ev.Type, in one transaction, and returns how many deliveries it created;
	// nothing when no endpoint takes it, or when the key was stored before (0).
	RecordEvent(ctx context.Context, organizationID uuid.UUID, ev Event, requeueAfter time.Duration) (int, error)
	// ClaimDelivery leases the delivery for lease when it is pending, has made attempt-1 attempts and
	// is not leased already; found is false otherwise (another worker holds it, or it has moved on).
	// The lease is a column, not a row lock: no connection is held while the worker POSTs.
	ClaimDelivery(ctx context.Context, deliveryID uuid.UUID, attempt int, lease time.Duration) (c Claim, found bool, err error)
	// RecordOutcome records the outcome of a claimed delivery (its attempt, its new state, its
	// endpoint's health) and ends the lease, in one transaction.
	RecordOutcome(ctx context.Context, c Claim, out Outcome) error
	// EnqueueDue enqueues a job for up to limit pending deliveries whose due time has passed and moves
	// their due time requeueAfter ahead; it returns how many it enqueued.
	EnqueueDue(ctx context.Context, limit int, requeueAfter time.Duration) (int, error)
	// PruneInbox forgets handled change ids older than age.
	PruneInbox(ctx context.Context, age time.Duration) error

	// GetDelivery returns a delivery of the organization with its attempts.
	GetDelivery(ctx context.Context, organizationID, id uuid.UUID) (Delivery, error)
	// ListDeliveries returns a page of an endpoint's deliveries, newest first, and the next cursor.
	ListDeliveries(ctx context.Context, organizationID, endpointID uuid.UUID, page Page) ([]Delivery, string, error)
	// Replay creates a pending delivery of the same event to the same endpoint (with its job);
	// fault.ErrEndpointDisabled or fault.ErrEndpointRevoked when the endpoint cannot receive it.
	Replay(ctx context.Context, organizationID, id uuid.UUID, requeueAfter time.Duration) (Delivery, error)
}

// Claim is a locked delivery, with what the worker needs to send it.
type Claim struct {
	DeliveryID     uuid.UUID
	OrganizationID uuid.UUID
	Attempt        int
	EventID        uuid.UUID
	Payload        []byte
	Endpoint       ClaimedEndpoint
}

// Attempted is a claimed delivery and the outcome of its attempt.
type Attempted struct {
	Claim   Claim
	Outcome Outcome
}

// ClaimedEndpoint is the receiving endpoint as the worker sees it, secret included.
type ClaimedEndpoint struct {
	ID       uuid.UUID
	URL      string
	Secret   string
	Disabled bool
	Revoked  bool
}

// Outcome is what becomes of a claimed delivery.
type Outcome struct {
	// Attempt is the record of the POST; nil when none was sent (endpoint disabled or revoked).
	Attempt       *Attempt
	Status        string
	FailureReason string
	// NextAttemptAt is when the retry is due; zero unless Status is pending.
	NextAttemptAt time.Time
	Endpoint      EndpointEffect
}

// EndpointEffect is what the outcome does to the endpoint's health.
type EndpointEffect struct {
	// Succeeded resets the endpoint's consecutive failures.
	Succeeded bool
	// Gone disables the endpoint at once (the receiver answered 410).
	Gone bool
	// Exhausted counts one more failed delivery and disables the endpoint when the count reaches
	// DisableAfter.
	Exhausted    bool
	DisableAfter int
}
