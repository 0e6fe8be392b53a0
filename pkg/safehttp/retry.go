package safehttp

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Back-off defaults (WithBackoff, WithMaxRetryAfter change them).
const (
	// DefaultBackoffBase is the first retry's nominal delay; each retry doubles it.
	DefaultBackoffBase = 250 * time.Millisecond
	// DefaultBackoffMax caps the nominal delay.
	DefaultBackoffMax = 5 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After a Client waits for. A longer one ends the retries:
	// asking again before the server's stated time would only earn another refusal, so the error (with
	// its RetryAfter) goes back to the caller's own schedule.
	DefaultMaxRetryAfter = 30 * time.Second
)

// retryableStatus reports statuses that may succeed on a later attempt: 408 Request Timeout, 425 Too
// Early, 429 Too Many Requests and 5xx, except 501 Not Implemented and 505 HTTP Version Not Supported,
// which a retry cannot change.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500 && code <= 599
}

// backoff returns the delay before retry n (n = 1 after the first attempt): the nominal delay
// base·2^(n-1), capped at max, with "equal jitter": a uniform draw from [d/2, d]. Half the delay is
// guaranteed, so retries stay spaced out; the other half spreads clients that failed together.
func (c *Client) backoff(n int) time.Duration {
	d := c.backoffBase
	for i := 1; i < n && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date (RFC 9110 §10.2.3). It
// returns 0 when the header is absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Cap before multiplying so that a huge value cannot overflow into a negative duration.
		return time.Duration(min(secs, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
