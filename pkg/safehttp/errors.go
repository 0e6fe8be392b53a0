package safehttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// Kind classifies a failure; callers map kinds to their own responses (a 422 for a bad registration, a
// failed delivery attempt for a webhook).
type Kind int

// The kinds of failure. Permanent reports which of them a retry cannot fix.
const (
	KindUnknown          Kind = iota
	KindBadURL                // malformed URL, scheme not allowed, credentials in URL, bad host syntax
	KindHostNotAllowed        // host not on Policy.AllowedHosts
	KindBlockedAddress        // host is, or resolves to, a blocked address
	KindTooLarge              // body larger than Policy.MaxBytes
	KindMIME                  // media type not allowed, or content does not match it
	KindStatus                // response status other than 2xx or 304
	KindTimeout               // an attempt exceeded Policy.Timeout
	KindNetwork               // connection refused, reset, or closed early
	KindDNS                   // the host name could not be resolved
	KindTLS                   // certificate or TLS protocol failure
	KindTooManyRedirects      // more than Policy.MaxRedirects redirects
	KindCanceled              // the caller's context ended
)

var kindNames = [...]string{
	KindUnknown:          "unknown error",
	KindBadURL:           "bad URL",
	KindHostNotAllowed:   "host not allowed",
	KindBlockedAddress:   "blocked address",
	KindTooLarge:         "response too large",
	KindMIME:             "media type rejected",
	KindStatus:           "unexpected status",
	KindTimeout:          "timeout",
	KindNetwork:          "network error",
	KindDNS:              "DNS lookup failed",
	KindTLS:              "TLS failure",
	KindTooManyRedirects: "too many redirects",
	KindCanceled:         "canceled",
}

var kindCodes = [...]string{
	KindUnknown:          "unknown",
	KindBadURL:           "bad_url",
	KindHostNotAllowed:   "host_not_allowed",
	KindBlockedAddress:   "blocked_address",
	KindTooLarge:         "too_large",
	KindMIME:             "mime",
	KindStatus:           "status",
	KindTimeout:          "timeout",
	KindNetwork:          "network",
	KindDNS:              "dns",
	KindTLS:              "tls",
	KindTooManyRedirects: "too_many_redirects",
	KindCanceled:         "canceled",
}

// Code returns k as a stable snake_case identifier, for APIs and stored records (String is prose).
func (k Kind) Code() string {
	if k >= 0 && int(k) < len(kindCodes) {
		return kindCodes[k]
	}
	return "unknown"
}

// String returns a short lower-case description of k.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the error every function of this package returns. Its text names the host, never the whole
// URL (paths and queries carry webhook secrets) and never any part of a response body.
type Error struct {
	Kind Kind
	// Status is the HTTP status for KindStatus, else 0.
	Status int
	// Host is the host name or IP literal the failure concerns, when known.
	Host string
	// Addr is the refused address for KindBlockedAddress, when the refusal concerns an address.
	Addr netip.Addr
	// Reason is a fixed explanation written by this package (e.g. "private network (RFC 1918)").
	Reason string
	// RetryAfter is the delay a 429 or 503 response asked for, else 0.
	RetryAfter time.Duration
	// Attempts is how many requests Client.Do sent before giving up: 0 when the URL was refused up front.
	Attempts int
	// Excerpt holds the first bytes (at most ExcerptLimit) of the body of a KindStatus response, for
	// callers that record what a receiver answered. It is never part of the error's text.
	Excerpt []byte
	// Err is the underlying cause, stripped of *url.Error so that it cannot repeat the URL.
	Err error
}

// ExcerptLimit bounds Error.Excerpt.
const ExcerptLimit = 1 << 10

// Error returns "safehttp: <kind>[ <status>]: host "<host>"[: <addr>][: <reason>][: <cause>]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("safehttp: ")
	b.WriteString(e.Kind.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, " %d", e.Status)
	}
	if e.Host != "" {
		fmt.Fprintf(&b, ": host %q", e.Host)
	}
	if e.Addr.IsValid() {
		fmt.Fprintf(&b, ": address %s", e.Addr)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the underlying cause, so errors.Is(err, context.Canceled) works.
func (e *Error) Unwrap() error { return e.Err }

// permanent reports whether retrying the same request cannot help.
func (e *Error) permanent() bool {
	switch e.Kind {
	case KindTimeout, KindNetwork, KindDNS:
		return false
	case KindStatus:
		return !retryableStatus(e.Status)
	default:
		return true
	}
}

// Permanent reports whether err is a safehttp failure that a retry cannot fix: a refused URL, host or
// address, a body too large, a rejected media type, a 4xx other than 408, 425 and 429, too many
// redirects, a TLS failure or a canceled context. It is false for nil, for transient failures and for
// errors from other packages.
func Permanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.permanent()
}

// KindOf returns the Kind of the *Error in err's chain, or KindUnknown.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// classify turns an error from the transport, the body or a context into an *Error for host. parent is
// the caller's context and attempt the per-attempt one derived from it: a deadline of the attempt is a
// (retryable) timeout, an end of the caller's context is a (permanent) cancellation.
func classify(err error, parent, attempt context.Context, host string) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Host == "" {
			e.Host = host
		}
		return e
	}
	cause := stripURL(err)
	if parent.Err() != nil {
		return &Error{Kind: KindCanceled, Host: host, Err: context.Cause(parent)}
	}
	if attempt != nil && errors.Is(attempt.Err(), context.DeadlineExceeded) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return &Error{Kind: KindTimeout, Host: host, Err: cause}
	}
	var (
		certErr   *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	if errors.As(err, &certErr) || errors.As(err, &recordErr) || errors.As(err, &unknownCA) ||
		errors.As(err, &hostErr) || errors.As(err, &invalid) {
		return &Error{Kind: KindTLS, Host: host, Err: cause}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return &Error{Kind: KindDNS, Host: host, Err: cause}
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return &Error{Kind: KindTimeout, Host: host, Err: cause}
	}
	return &Error{Kind: KindNetwork, Host: host, Err: cause}
}

// stripURL removes *url.Error layers, whose text repeats the whole URL, query string included, and
// withholds the text of any other error that may quote the response.
func stripURL(err error) error {
	for {
		var ue *url.Error
		if !errors.As(err, &ue) {
			return withhold(err)
		}
		err = ue.Err
	}
}

// withheld hides the text of a transport error while keeping it reachable through errors.As.
type withheld struct{ err error }

func (w withheld) Error() string { return "malformed or unexpected response (details withheld)" }
func (w withheld) Unwrap() error { return w.err }

// withhold passes errors whose text is known to hold no response bytes (socket, DNS, TLS, deadline and
// EOF errors) and wraps the rest in withheld: net/http quotes a malformed status line ("malformed HTTP
// response \"...\""), textproto a malformed header line, HTTP/2 the server's GOAWAY debug data.
func withhold(err error) error {
	switch err.(type) {
	case *net.OpError, *net.DNSError, *tls.CertificateVerificationError, tls.RecordHeaderError,
		x509.UnknownAuthorityError, x509.HostnameError, x509.CertificateInvalidError, syscall.Errno:
		return err
	}
	switch err {
	case io.EOF, io.ErrUnexpectedEOF, context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded:
		return err
	}
	return withheld{err}
}
