// Package fault declares the errors of the verification service's use cases and store: one set,
// shared by every area, that internal/api/errors.go maps to what a client sees in one place. A store
// returns these sentinels (never pgx's), so that a use case can tell them apart without importing it.
package fault

import (
	"errors"

	"github.com/google/uuid"
)

// Sentinel errors.
var (
	// ErrNotFound: no such organization, API key, watch, webhook endpoint, delivery, dataset or
	// artifact; lookups scoped to an organization also answer it for another organization's rows, so
	// that nobody learns they exist. The route knows which resource it addressed.
	ErrNotFound = errors.New("not found")
	// ErrServerNotFound: no registry listed a server with this namespace and name.
	ErrServerNotFound = errors.New("server not found")
	// ErrVersionNotFound: the server exists, but no snapshot has this version.
	ErrVersionNotFound = errors.New("version not found")
	// ErrBadCursor: a page cursor this service did not issue.
	ErrBadCursor = errors.New("malformed cursor")
	// ErrUnauthenticated: the bearer token is unknown or revoked.
	ErrUnauthenticated = errors.New("invalid or revoked API key")
	// ErrSyncInProgress: another replica is polling the registry right now.
	ErrSyncInProgress = errors.New("a sync of this registry is in progress")
	// ErrWatchLimit: the organization has as many active watches as it may (see LimitError).
	ErrWatchLimit = errors.New("active watch limit reached")
	// ErrEndpointLimit: the organization has as many webhook endpoints as it may (see LimitError).
	ErrEndpointLimit = errors.New("webhook endpoint limit reached")
	// ErrEndpointDisabled: the endpoint is disabled, so it receives nothing until it is enabled.
	ErrEndpointDisabled = errors.New("webhook endpoint disabled")
	// ErrEndpointRevoked: the endpoint is revoked and receives nothing ever again.
	ErrEndpointRevoked = errors.New("webhook endpoint revoked")
	// ErrInvalidChange: a change event without an id or a server; its consumer drops it rather than
	// retrying it for ever.
	ErrInvalidChange = errors.New("invalid change: id, namespace and name are required")
	// ErrBadSignature: a download URL whose signature is wrong or expired.
	ErrBadSignature = errors.New("invalid or expired download URL")
)

// LimitError is returned when an organization reached a cap; it wraps ErrWatchLimit or
// ErrEndpointLimit.
type LimitError struct {
	Err   error
	Limit int
}

func (e *LimitError) Error() string { return e.Err.Error() }

// Unwrap returns the sentinel.
func (e *LimitError) Unwrap() error { return e.Err }

// WatchExistsError is returned when the organization already watches the server.
type WatchExistsError struct {
	WatchID uuid.UUID
}

func (e *WatchExistsError) Error() string { return "watch already exists: " + e.WatchID.String() }

// Problem is one invalid field of a request body.
type Problem struct {
	// Field is a dotted path inside the request body ("url", "endpoint_ids.2").
	Field string
	// Message and Type are FastAPI's msg and type for the problem.
	Message string
	Type    string
}

// ValidationError lists what is wrong with a request body, field by field.
type ValidationError struct {
	Problems []Problem
}

// Invalid is a ValidationError of one field.
func Invalid(field, typ, message string) *ValidationError {
	return &ValidationError{Problems: []Problem{{Field: field, Message: message, Type: typ}}}
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid request"
	}
	return e.Problems[0].Field + ": " + e.Problems[0].Message
}
