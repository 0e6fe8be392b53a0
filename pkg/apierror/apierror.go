// Package apierror is the one error type every service returns from its gRPC handlers when the client
// must see a documented HTTP status and body. The error travels as a gRPC status (with a code gRPC
// callers understand) whose details carry the exact HTTP status and JSON body; the gateway's error handler
// (package gateway) renders it unchanged.
package apierror

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
)

// Error is a client-facing error: an HTTP status and the whole JSON body the service documents for it.
type Error struct {
	Status int
	Body   map[string]any
	// RetryAfter, when positive, is the wait the answer's Retry-After header announces (RFC 9110
	// section 10.2.3): the platform's interceptor sets it on the gateway's answer, and a plain handler
	// writes it with Header. It is not part of the body, and does not travel to gRPC callers.
	RetryAfter time.Duration
}

// UnavailableCode is the stable code of a 503 answered because a dependency of the service (its
// database) cannot be reached; the same request may succeed after Retry-After.
const UnavailableCode = "service_unavailable"

// UnavailableMessage is the message of that 503: it names no host, address or driver error.
const UnavailableMessage = "The service cannot reach its database right now; retry after the delay in Retry-After"

// UnavailableRetryAfter is the wait a 503 of an unreachable database announces: long enough not to
// hammer a database that is restarting, short enough that a client resumes soon after it is back
// (a pool reconnects on the next request).
const UnavailableRetryAfter = 5 * time.Second

// Unavailable is the 503 of an unreachable database for a service whose error detail is a string:
// {"detail": "<message>", "error": "service_unavailable"}, the stable code beside the detail as
// scoring's 402 carries its own.
func Unavailable() *Error {
	return &Error{Status: http.StatusServiceUnavailable, RetryAfter: UnavailableRetryAfter,
		Body: map[string]any{"detail": UnavailableMessage, "error": UnavailableCode}}
}

// UnavailableCoded is the same 503 for a service whose documented errors carry their code inside the
// detail: {"detail": {"error": "service_unavailable", "message": "<message>"}}.
func UnavailableCoded() *Error {
	e := Coded(http.StatusServiceUnavailable, UnavailableCode, UnavailableMessage, nil)
	e.RetryAfter = UnavailableRetryAfter
	return e
}

// RetryAfterSeconds is e's Retry-After value, whole seconds rounded up, or "" when it announces none.
func (e *Error) RetryAfterSeconds() string {
	if e.RetryAfter <= 0 {
		return ""
	}
	return strconv.FormatInt(int64((e.RetryAfter+time.Second-1)/time.Second), 10)
}

// Header sets e's Retry-After on h when it announces one: for plain handlers, which answer without
// the gateway.
func (e *Error) Header(h http.Header) {
	if v := e.RetryAfterSeconds(); v != "" {
		h.Set("Retry-After", v)
	}
}

// New returns an error whose body is {"detail": detail}. detail is a string or a JSON object
// (map[string]any), as the service's spec prescribes.
func New(httpStatus int, detail any) *Error {
	return &Error{Status: httpStatus, Body: map[string]any{"detail": detail}}
}

// Newf returns an error whose body is {"detail": "<formatted message>"}.
func Newf(httpStatus int, format string, args ...any) *Error {
	return New(httpStatus, fmt.Sprintf(format, args...))
}

// Coded returns an error whose body is {"detail": {"error": code, "message": message, ...extra}}, the
// shape of documented errors that carry a stable code and extra fields (limit, watchId, upgrade_url).
func Coded(httpStatus int, code, message string, extra map[string]any) *Error {
	detail := map[string]any{"error": code, "message": message}
	for k, v := range extra {
		detail[k] = v
	}
	return New(httpStatus, detail)
}

// Violation is one entry of a FastAPI-style HTTPValidationError.
type Violation struct {
	// Loc locates the bad input: its origin ("body", "query", "path", "header") then field names or
	// list indexes, e.g. ["body", "items", 0, "url"].
	Loc  []any
	Msg  string
	Type string
}

// Validation returns 422 with a FastAPI-style HTTPValidationError body:
// {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}.
func Validation(violations ...Violation) *Error {
	list := make([]any, 0, len(violations))
	for _, v := range violations {
		loc := make([]any, len(v.Loc))
		for i, l := range v.Loc {
			if n, ok := l.(int); ok {
				l = float64(n) // structpb keeps every JSON number as a float64
			}
			loc[i] = l
		}
		list = append(list, map[string]any{"loc": loc, "msg": v.Msg, "type": v.Type})
	}
	return New(http.StatusUnprocessableEntity, list)
}

// Error returns a one-line description for logs; it never carries an internal cause.
func (e *Error) Error() string {
	if d, ok := e.Body["detail"].(string); ok {
		return fmt.Sprintf("%d: %s", e.Status, d)
	}
	return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
}

// GRPCStatus lets grpc-go turn the error into a status: the code mapped from the HTTP status, a message,
// and a platform.v1.HttpError detail with the exact status and body.
func (e *Error) GRPCStatus() *status.Status {
	msg := http.StatusText(e.Status)
	if d, ok := e.Body["detail"].(string); ok {
		msg = d
	}
	st := status.New(CodeFromHTTP(e.Status), msg)
	body, err := structpb.NewStruct(e.Body)
	if err != nil {
		// Only non-JSON values (channels, funcs) fail here: a programming error, surfaced loudly.
		return status.New(codes.Internal, "unencodable error body")
	}
	withDetail, err := st.WithDetails(&platformv1.HttpError{Status: int32(e.Status), Body: body})
	if err != nil {
		return st
	}
	return withDetail
}

// FromStatus extracts the HTTP error carried by a gRPC status, if it has one.
func FromStatus(st *status.Status) (*Error, bool) {
	for _, d := range st.Details() {
		if he, ok := d.(*platformv1.HttpError); ok {
			return &Error{Status: int(he.GetStatus()), Body: he.GetBody().AsMap()}, true
		}
	}
	return nil, false
}

// As reports whether err is or wraps an *Error.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeFromHTTP maps an HTTP status to the gRPC code a gRPC caller should see for it.
func CodeFromHTTP(httpStatus int) codes.Code {
	switch httpStatus {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusPaymentRequired, http.StatusPreconditionFailed:
		return codes.FailedPrecondition
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusGone:
		return codes.NotFound
	case http.StatusConflict:
		return codes.AlreadyExists
	case http.StatusRequestEntityTooLarge:
		return codes.OutOfRange
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusNotImplemented:
		return codes.Unimplemented
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	case http.StatusGatewayTimeout:
		return codes.DeadlineExceeded
	}
	if httpStatus >= 500 {
		return codes.Internal
	}
	return codes.Unknown
}
