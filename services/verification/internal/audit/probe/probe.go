// Package probe is the bounded HTTP client of an MCP audit. An audit talks to anybody's server, in
// production, so the client enforces the promises the service makes to the target and to itself:
// at most Limits.MaxRequests requests per audit, at most Limits.MaxConcurrent at once, at most
// Limits.MaxResponseBytes read from any answer, each request within Limits.RequestTimeout, no
// redirect followed, and every connection dialled through the SSRF guard's transport. Every answer
// is returned as it is (a 400 or a 405 is evidence, not an error), and the caller's own headers for
// the target are sent but never appear in what Redact returns.
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits bound one audit's traffic.
type Limits struct {
	// MaxRequests caps the requests of one audit, every path included.
	MaxRequests int
	// MaxConcurrent caps the requests in flight at once.
	MaxConcurrent int
	// MaxResponseBytes caps what is read of one answer; the rest is discarded unread.
	MaxResponseBytes int64
	// RequestTimeout caps one request, from dial to the last byte read.
	RequestTimeout time.Duration
}

// DefaultLimits are the limits the service documents: a full conformance audit sends about 40
// requests, so 64 leaves room for pagination without letting a hostile server keep the auditor busy.
var DefaultLimits = Limits{MaxRequests: 64, MaxConcurrent: 4, MaxResponseBytes: 1 << 20, RequestTimeout: 10 * time.Second}

// WithDefaults returns l with its zero fields taken from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.MaxRequests <= 0 {
		l.MaxRequests = d.MaxRequests
	}
	if l.MaxConcurrent <= 0 {
		l.MaxConcurrent = d.MaxConcurrent
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = d.MaxResponseBytes
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = d.RequestTimeout
	}
	return l
}

// ErrBudget is returned once an audit has sent MaxRequests requests.
var ErrBudget = errors.New("the audit's request budget is spent")

// Client sends the requests of one audit. It is safe for concurrent use; make one per audit.
type Client struct {
	http    *http.Client
	limits  Limits
	extra   http.Header
	secrets []string
	slots   chan struct{}

	mu        sync.Mutex
	requests  int
	received  int64
	truncated int
	tls       *tls.ConnectionState
}

// New returns a Client over rt (the SSRF guard's transport) that adds extra, the caller's headers
// for the target (its own Authorization, say), to every request.
func New(rt http.RoundTripper, extra http.Header, l Limits) *Client {
	c := &Client{
		// No redirect is followed: an MCP endpoint that redirects a POST is a finding, and each hop
		// would need the target checks again.
		http: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		limits: l,
		extra:  extra.Clone(),
		slots:  make(chan struct{}, max(1, l.MaxConcurrent)),
	}
	for _, vs := range extra {
		for _, v := range vs {
			if v = strings.TrimSpace(v); len(v) >= 4 {
				c.secrets = append(c.secrets, v)
				// A bearer header's token alone may be echoed back by a server.
				if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= 4 {
					c.secrets = append(c.secrets, tok)
				}
			}
		}
	}
	return c
}

// Request is one request to the target or to a document it names.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// HeadersOnly closes the answer after its headers (a GET that may open an endless stream).
	HeadersOnly bool
	// NoExtra leaves the caller's headers out (an unauthenticated probe, or a request to another host).
	NoExtra bool
	// UntilReply, for an SSE answer, stops reading at the first event that carries a JSON-RPC
	// response with this id (a stream may stay open after it).
	UntilReply string
}

// Response is one answer. Err is set, and the other fields may be empty, when no answer came: the
// connection failed, TLS failed, the request timed out.
type Response struct {
	Status    int
	Header    http.Header
	Body      []byte
	Truncated bool
	Duration  time.Duration
	Err       error
}

// Stats is what an audit has sent and received so far.
type Stats struct {
	Requests      int
	MaxRequests   int
	BytesReceived int64
	Truncated     int
}

// Stats reports the traffic so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Requests: c.requests, MaxRequests: c.limits.MaxRequests, BytesReceived: c.received, Truncated: c.truncated}
}

// TLS returns the connection state of the first TLS answer, nil before one.
func (c *Client) TLS() *tls.ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tls
}

// Do sends r. Its error is ErrBudget or the context's; anything the target did is in the Response.
func (c *Client) Do(ctx context.Context, r Request) (*Response, error) {
	if err := c.take(); err != nil {
		return nil, err
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-c.slots }()
	ctx, cancel := context.WithTimeout(ctx, c.limits.RequestTimeout)
	defer cancel()

	start := time.Now()
	resp := c.send(ctx, r)
	resp.Duration = time.Since(start)
	if resp.Err != nil && ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if parent := context.Cause(ctx); parent != context.DeadlineExceeded {
			return nil, parent
		}
		resp.Err = fmt.Errorf("no complete answer within %s", c.limits.RequestTimeout)
	}
	return resp, nil
}

// take counts a request against the budget.
func (c *Client) take() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requests >= c.limits.MaxRequests {
		return ErrBudget
	}
	c.requests++
	return nil
}

func (c *Client) send(ctx context.Context, r Request) *Response {
	method := r.Method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL, body)
	if err != nil {
		return &Response{Err: errors.New("the request could not be built")}
	}
	req.Header.Set("User-Agent", "trustlayer-audit/1")
	if !r.NoExtra {
		for k, vs := range c.extra {
			req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
		}
	}
	for k, vs := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	hres, err := c.http.Do(req)
	if err != nil {
		return &Response{Err: describe(err)}
	}
	defer hres.Body.Close()
	out := &Response{Status: hres.StatusCode, Header: hres.Header}
	if hres.TLS != nil {
		c.mu.Lock()
		if c.tls == nil {
			state := *hres.TLS
			c.tls = &state
		}
		c.mu.Unlock()
	}
	if r.HeadersOnly {
		return out
	}
	out.Body, out.Truncated, out.Err = c.read(hres, r.UntilReply)
	c.mu.Lock()
	c.received += int64(len(out.Body))
	if out.Truncated {
		c.truncated++
	}
	c.mu.Unlock()
	return out
}

// read reads at most MaxResponseBytes of an answer; for an event stream with untilID, it stops
// after the event that answers that id.
func (c *Client) read(res *http.Response, untilID string) ([]byte, bool, error) {
	limit := c.limits.MaxResponseBytes
	lr := io.LimitReader(res.Body, limit+1)
	if untilID != "" && isEventStream(res.Header) {
		body, err := readEventsUntil(lr, untilID)
		if int64(len(body)) > limit {
			return body[:limit], true, nil
		}
		if err != nil {
			return body, false, describe(err)
		}
		return body, false, nil
	}
	body, err := io.ReadAll(lr)
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	if err != nil {
		return body, false, describe(err)
	}
	return body, false, nil
}

// Redact removes the caller's header values from s, so that details never carry a credential the
// caller gave for the target, even when the target echoes it.
func (c *Client) Redact(s string) string {
	for _, secret := range c.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// describe turns a transport error into words that name no internal address: the dialled address
// of a refused connection is the target's own, but a resolver's error names the resolver.
func describe(err error) error {
	var tlsErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("timed out")
	case errors.As(err, &tlsErr):
		return errors.New("TLS certificate not trusted: " + tlsErr.Err.Error())
	case errors.As(err, &recordErr):
		return errors.New("the server does not speak TLS on this port")
	case strings.Contains(msg, "connection refused"):
		return errors.New("connection refused")
	case strings.Contains(msg, "connection reset"):
		return errors.New("connection reset")
	case strings.Contains(msg, "tls:"):
		return errors.New("TLS handshake failed")
	case strings.Contains(msg, "no such host"), strings.Contains(msg, "lookup"):
		return errors.New("the host did not resolve")
	case strings.Contains(msg, "blocked"):
		return errors.New("the address is not public (refused by the SSRF guard)")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("the connection closed before the answer ended")
	}
	return errors.New("the request failed")
}

// RedactJSON removes the caller's header values from a JSON document, in the forms JSON encoding
// gives them.
func (c *Client) RedactJSON(doc []byte) []byte {
	s := string(doc)
	for _, secret := range c.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
		if quoted, err := json.Marshal(secret); err == nil {
			s = strings.ReplaceAll(s, strings.Trim(string(quoted), `"`), "[redacted]")
		}
	}
	return []byte(s)
}
