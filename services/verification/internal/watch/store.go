package watch

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Page bounds of the watch API's lists: limit 1..MaxPageLimit, DefaultPageLimit when absent.
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// Page asks for one page of a list, newest first: at most Limit items after Cursor (the previous
// page's next cursor; "" for the first page). A cursor this service did not issue is
// fault.ErrBadCursor.
type Page struct {
	Limit  int
	Cursor string
}

// Store persists watch API keys, watches and policies; the runs are RunStore's. Lookups scoped to an
// organization return fault.ErrNotFound for another organization's rows, and for archived watches,
// so that nobody learns they exist.
type Store interface {
	// CreateKey stores k by the SHA-256 of its secret; fault.ErrNotFound when the organization does
	// not exist.
	CreateKey(ctx context.Context, k Key, hash []byte) (Key, error)
	// ListKeys lists the organization's keys, revoked and expired ones included, oldest first;
	// fault.ErrNotFound when the organization does not exist.
	ListKeys(ctx context.Context, organizationID uuid.UUID) ([]Key, error)
	// RevokeKey revokes a key, keeping the time of an earlier revocation; fault.ErrNotFound for an
	// unknown key.
	RevokeKey(ctx context.Context, id uuid.UUID, at time.Time) error
	// KeyByHash returns the key whose secret has this SHA-256 and the hash as stored, revoked and
	// expired keys included (the caller tells them apart); fault.ErrNotFound when none has it.
	KeyByHash(ctx context.Context, hash []byte) (Key, []byte, error)

	// CreateWatch stores w unless the organization already has a watch of its target and evaluator
	// that is not archived (*fault.TargetWatchExistsError), or limit watches that are not archived
	// (fault.ErrWatchLimit); fault.ErrUnknownPolicy when w names a policy the organization lacks.
	CreateWatch(ctx context.Context, w Watch, limit int) (Watch, error)
	// ListWatches returns a page of the organization's watches that are not archived (only those in
	// status, unless it is ""), newest first, each with its last run, and the next cursor ("" after
	// the last page).
	ListWatches(ctx context.Context, organizationID uuid.UUID, status string, page Page) ([]Watch, string, error)
	// GetWatch returns a watch of the organization that is not archived, with its last run.
	GetWatch(ctx context.Context, organizationID, id uuid.UUID) (Watch, error)
	// UpdateWatch applies c to a watch of the organization that is not archived and returns it with
	// its last run; fault.ErrUnknownPolicy when c names a policy the organization lacks.
	UpdateWatch(ctx context.Context, organizationID, id uuid.UUID, c WatchChange) (Watch, error)
	// ArchiveWatch archives a watch that is not archived yet and clears its policy, so that the
	// policy can be deleted.
	ArchiveWatch(ctx context.Context, organizationID, id uuid.UUID, at time.Time) error

	// CreatePolicy stores p; fault.ErrPolicyNameExists when the organization has a policy of its name.
	CreatePolicy(ctx context.Context, p Policy) (Policy, error)
	// ListPolicies returns a page of the organization's policies, newest first, and the next cursor.
	ListPolicies(ctx context.Context, organizationID uuid.UUID, page Page) ([]Policy, string, error)
	// GetPolicy returns a policy of the organization.
	GetPolicy(ctx context.Context, organizationID, id uuid.UUID) (Policy, error)
	// UpdatePolicy applies c to a policy of the organization; fault.ErrPolicyNameExists on a rename
	// to a name the organization uses.
	UpdatePolicy(ctx context.Context, organizationID, id uuid.UUID, c PolicyChange) (Policy, error)
	// DeletePolicy deletes a policy of the organization; fault.ErrPolicyInUse while a watch that is
	// not archived uses it.
	DeletePolicy(ctx context.Context, organizationID, id uuid.UUID) error
}

// WatchChange is what a PATCH of a watch sets; nil fields stay as they are.
type WatchChange struct {
	Status *string
	// SetPolicy replaces the policy with PolicyID (nil: none).
	SetPolicy bool
	PolicyID  *uuid.UUID
	// IntervalSeconds, when set, also brings the next run forward to At + the interval when that is
	// sooner than the one planned.
	IntervalSeconds *int
	At              time.Time
}

// PolicyChange is what a PATCH of a policy sets; nil fields stay as they are.
type PolicyChange struct {
	Name  *string
	Rules *Rules
	At    time.Time
}
