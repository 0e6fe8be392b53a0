package meter

import (
	"errors"
	"fmt"
	"time"
)

// The reasons Admit refuses a request. Admit returns them inside a *LimitError; test with errors.Is.
var (
	// ErrRateLimited: the key sent requests faster than its plan's rate and burst (429).
	ErrRateLimited = errors.New("rate limit exceeded")
	// ErrInFlight: the key already has its plan's number of scoring requests running (429).
	ErrInFlight = errors.New("too many scoring requests in flight")
	// ErrQuotaExhausted: a hard-quota key has fewer calls left this month than the request needs (402).
	ErrQuotaExhausted = errors.New("monthly quota exhausted")
)

// LimitError is Admit's refusal: which limit was hit and when a retry can succeed.
type LimitError struct {
	// Err is ErrRateLimited, ErrInFlight or ErrQuotaExhausted.
	Err error
	// RetryAfter is the wait until a retry can pass: the next token for ErrRateLimited, the start of
	// the next period for ErrQuotaExhausted, and zero (unknown: when a running request ends) for
	// ErrInFlight.
	RetryAfter time.Duration
	// For ErrQuotaExhausted: the calls the request needed, those left this period (fewer), and the
	// plan's included calls.
	Needed, Remaining, Included int64
	// UpgradeURL, for ErrQuotaExhausted, is where the key's account moves to a plan without a hard
	// quota (WithUpgradeURL).
	UpgradeURL string
}

func (e *LimitError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%v (retry after %v)", e.Err, e.RetryAfter)
	}
	return e.Err.Error()
}

// Unwrap returns the reason, so that errors.Is(err, ErrRateLimited) works.
func (e *LimitError) Unwrap() error { return e.Err }
