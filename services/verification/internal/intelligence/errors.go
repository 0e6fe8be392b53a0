package intelligence

import "errors"

// Errors the use cases and stores return; the API maps each to one status in one place
// (internal/api/intel_errors.go).
var (
	// ErrServerNotFound: no registry listed a server with this namespace and name.
	ErrServerNotFound = errors.New("server not found")
	// ErrVersionNotFound: the server exists, but no snapshot has this version.
	ErrVersionNotFound = errors.New("version not found")
	// ErrBadCursor: a page cursor this service did not issue.
	ErrBadCursor = errors.New("malformed cursor")
	// ErrSyncInProgress: another replica is polling the registry right now.
	ErrSyncInProgress = errors.New("a sync of this registry is in progress")
)
