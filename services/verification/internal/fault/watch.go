package fault

import (
	"errors"

	"github.com/google/uuid"
)

// Errors of the watch API (/v1/watch/*). A watch that is not found, archived or another
// organization's is ErrNotFound; so are unknown policies and watch API keys.
var (
	// ErrWatchKeyExpired: the watch API key was valid, and its life has ended.
	ErrWatchKeyExpired = errors.New("expired watch API key")
	// ErrWatchNotActive: the watch is paused or archived, so it cannot run.
	ErrWatchNotActive = errors.New("watch is not active")
	// ErrPolicyNameExists: the organization already has a policy of this name.
	ErrPolicyNameExists = errors.New("watch policy name exists")
	// ErrPolicyInUse: a watch that is not archived uses the policy, so it cannot be deleted.
	ErrPolicyInUse = errors.New("watch policy in use")
	// ErrUnknownPolicy: a watch names a policy the organization does not have (a bad body field,
	// unlike ErrNotFound, which is the route's own resource).
	ErrUnknownPolicy = errors.New("unknown watch policy")
)

// TargetWatchExistsError is returned when the organization already has a watch of the target with
// the evaluator that is not archived.
type TargetWatchExistsError struct {
	WatchID uuid.UUID
}

func (e *TargetWatchExistsError) Error() string {
	return "target watch already exists: " + e.WatchID.String()
}
