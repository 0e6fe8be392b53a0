package ingest

import "errors"

// Errors the use cases return; the API maps each to one status in one place (internal/api/errors.go).
var (
	// ErrNotFound: no such source, policy or run.
	ErrNotFound = errors.New("not found")
	// ErrRunInProgress: a discovery run of the source is already running (on any replica).
	ErrRunInProgress = errors.New("a discovery run of this source is already in progress")
	// ErrTermsNotApproved: the source's terms review is not approved, so it may not be fetched.
	ErrTermsNotApproved = errors.New("the source's terms review is not approved; discovery runs only for approved sources")
)

// ValidationError lists what is wrong with a request, field by field.
type ValidationError struct {
	Problems []FieldProblem
}

// FieldProblem is one invalid field.
type FieldProblem struct {
	Field   string
	Message string
	Type    string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 0 {
		return "invalid request"
	}
	return e.Problems[0].Field + ": " + e.Problems[0].Message
}

func (e *ValidationError) add(field, typ, msg string) {
	e.Problems = append(e.Problems, FieldProblem{Field: field, Message: msg, Type: typ})
}

func (e *ValidationError) orNil() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}
