// Package fault holds the errors that the scoring service's use cases and its store share. Each
// names a kind of failure, and the text wrapped around it (fmt.Errorf("%w: ...")) is the sentence
// for the caller; internal/api/errors.go maps each kind to one status.
package fault

import "errors"

var (
	// ErrNotFound is a row, key, account, request record or link that does not exist (404). The
	// store returns it bare; a use case wraps it with what was looked for.
	ErrNotFound = errors.New("not found")
	// ErrInvalid is a request a use case refuses as it stands (422); the wrapped text says why.
	ErrInvalid = errors.New("invalid")
)
