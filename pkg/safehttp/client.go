package safehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/trustlayer/trustlayer/pkg/periodic"
)

// userAgent identifies the fetcher to servers that log it, unless the caller sets its own.
const userAgent = "trustlayer-safehttp/1"

// Client fetches user-supplied URLs under a Policy. It is safe for concurrent use; make one per policy
// and reuse it, so that connections are pooled.
type Client struct {
	policy        Policy
	lookup        LookupFunc
	tlsConfig     *tls.Config
	backoffBase   time.Duration
	backoffMax    time.Duration
	maxRetryAfter time.Duration
	// dial connects to a checked address literal; sleep waits between attempts. Tests replace both.
	dial  func(ctx context.Context, network, address string) (net.Conn, error)
	sleep func(ctx context.Context, d time.Duration) error

	// idlePerHost is how many idle connections to one host are kept for reuse.
	idlePerHost int

	transport *http.Transport
	http      *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithLookup replaces the resolver (net.DefaultResolver.LookupNetIP). Tests use it to make a name
// resolve to a private address without touching DNS; every answer is still checked.
func WithLookup(lookup LookupFunc) Option {
	return func(c *Client) {
		if lookup != nil {
			c.lookup = lookup
		}
	}
}

// WithTLSConfig sets the TLS configuration, e.g. RootCAs for an on-premises certificate authority. It
// is cloned; a zero MinVersion becomes TLS 1.2.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *Client) {
		if cfg != nil {
			c.tlsConfig = cfg.Clone()
		}
	}
}

// WithIdleConnsPerHost keeps up to n idle connections to each host for reuse (net/http's default is
// 2): a client that sends many requests to one host at once, such as webhook deliveries to one
// receiver, would otherwise open and close a connection (and a TLS session) for most of them.
func WithIdleConnsPerHost(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.idlePerHost = n
		}
	}
}

// WithBackoff sets the nominal delay before the first retry and its cap (defaults DefaultBackoffBase
// and DefaultBackoffMax); non-positive values keep the defaults.
func WithBackoff(base, max time.Duration) Option {
	return func(c *Client) {
		if base > 0 {
			c.backoffBase = base
		}
		if max > 0 {
			c.backoffMax = max
		}
	}
}

// WithMaxRetryAfter sets the longest Retry-After honoured (default DefaultMaxRetryAfter).
func WithMaxRetryAfter(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.maxRetryAfter = d
		}
	}
}

// New returns a Client enforcing p, with zero values of p replaced by the defaults. Call p.Validate at
// start-up to report entries that can never match.
func New(p Policy, opts ...Option) *Client {
	c := &Client{
		policy:        p.withDefaults(),
		lookup:        defaultLookup,
		backoffBase:   DefaultBackoffBase,
		backoffMax:    DefaultBackoffMax,
		maxRetryAfter: DefaultMaxRetryAfter,
		sleep:         periodic.Sleep,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(c)
		}
	}
	c.backoffMax = max(c.backoffMax, c.backoffBase)
	dialer := &net.Dialer{Timeout: c.policy.Timeout, KeepAlive: 30 * time.Second, Control: c.control}
	c.dial = dialer.DialContext
	tlsConfig := c.tlsConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	if tlsConfig.MinVersion == 0 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	c.transport = &http.Transport{
		// No proxy, from the environment or elsewhere: the proxy would resolve and connect, and the
		// address check here would vet the proxy instead of the destination.
		Proxy:                 nil,
		DialContext:           c.dialContext,
		TLSClientConfig:       tlsConfig,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          max(100, c.idlePerHost),
		MaxIdleConnsPerHost:   c.idlePerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Go's default allows 10 MB of headers; 1 MiB is ample and keeps a hostile server from using
		// headers to get around MaxBytes.
		MaxResponseHeaderBytes: 1 << 20,
	}
	c.http = &http.Client{Transport: c.transport, CheckRedirect: c.checkRedirect}
	return c
}

// CloseIdleConnections closes pooled connections, e.g. at shutdown.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Transport returns the client's guarded transport, for callers that must see every answer as it is
// rather than through Do's fetch rules: an MCP audit reads a 400 or a 405 as a finding, not as a
// failed fetch. Its dials pass the same address checks as Do's. The caller handles what Do would:
// redirects (each hop's URL is checked again), body caps, retries and timeouts.
func (c *Client) Transport() http.RoundTripper { return c.transport }

// Request is one fetch. Method defaults to GET. Body, when set, is sent on every attempt and on 307 and
// 308 redirects; 301, 302 and 303 turn a POST into a GET without body, as browsers do (RFC 9110 §15.4).
// Authorization and Cookie headers are dropped on a redirect to another domain.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Response is a successful fetch: status 2xx, or 304 Not Modified for conditional requests.
type Response struct {
	Status int
	Header http.Header
	// FinalURL is the URL that produced this response; Redirects lists the URLs requested before it,
	// in order, starting with Request.URL (empty without redirects).
	FinalURL  string
	Redirects []string
	// Attempts counts the attempts Do made, this one included.
	Attempts int
	Timings  Timings
	// MediaType is the declared Content-Type without parameters, lower case; "" when absent.
	MediaType string
	// SniffedType is net/http.DetectContentType of the first 512 bytes, without parameters; "" for an
	// empty body.
	SniffedType string
	// Body streams the content, the sniffed bytes included; only those 512 bytes are held in memory.
	// Reading past Policy.MaxBytes fails with KindTooLarge, reading after the attempt's Timeout with
	// KindTimeout. The caller must close it.
	Body io.ReadCloser
}

// Do fetches req under the policy. Transient failures (timeouts, refused or reset connections, DNS
// failures, 408, 425, 429, 5xx other than 501 and 505) are retried up to MaxAttempts with jittered
// exponential back-off, waiting at least what a Retry-After asks; permanent ones are returned at once.
// Every error is an *Error. Retries resend any method, POST included (a webhook receiver must
// tolerate duplicates; MaxAttempts 1 turns retries off), and stop once the body is handed over: a
// failure while the caller reads it is the caller's to retry.
func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {
	start := time.Now()
	if req == nil {
		return nil, badURL("nil request")
	}
	u, err := c.parseURL(req.URL)
	if err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	for attempt := 1; ; attempt++ {
		resp, e := c.attempt(ctx, method, u, req)
		if e == nil {
			resp.Attempts = attempt
			resp.Timings.Total = time.Since(start)
			return resp, nil
		}
		e.Attempts = attempt
		if e.permanent() || attempt >= c.policy.MaxAttempts {
			return nil, e
		}
		wait := c.backoff(attempt)
		if e.RetryAfter > 0 {
			if e.RetryAfter > c.maxRetryAfter {
				return nil, e
			}
			wait = max(wait, e.RetryAfter)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			// The next attempt could not start before the caller's deadline.
			return nil, e
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, &Error{Kind: KindCanceled, Host: e.Host, Attempts: attempt, Err: context.Cause(ctx)}
		}
	}
}

// attempt makes one request, redirects included, and returns the response once its headers and the
// first 512 bytes of body have passed the checks.
func (c *Client) attempt(parent context.Context, method string, u *url.URL, r *Request) (*Response, *Error) {
	ctx, cancel := context.WithTimeout(parent, c.policy.Timeout)
	rec := &recorder{start: time.Now(), host: u.Hostname()}
	ctx = withRecorder(ctx, rec)

	var reqBody io.Reader
	if r.Body != nil {
		reqBody = bytes.NewReader(r.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		cancel()
		return nil, badURL("invalid method")
	}
	if r.Header != nil {
		hreq.Header = r.Header.Clone()
	}
	if hreq.Header.Get("User-Agent") == "" {
		hreq.Header.Set("User-Agent", userAgent)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		cancel()
		return nil, classify(err, parent, ctx, rec.currentHost())
	}
	host := resp.Request.URL.Hostname()
	fail := func(e *Error, drain bool) (*Response, *Error) {
		if drain {
			// Reading a little lets the connection return to the pool; the bytes are discarded unseen.
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		}
		_ = resp.Body.Close()
		cancel()
		return nil, e
	}
	if (resp.StatusCode < 200 || resp.StatusCode > 299) && resp.StatusCode != http.StatusNotModified {
		e := &Error{Kind: KindStatus, Status: resp.StatusCode, Host: host}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		e.Excerpt, _ = io.ReadAll(io.LimitReader(resp.Body, ExcerptLimit))
		return fail(e, true)
	}
	if resp.ContentLength > c.policy.MaxBytes {
		return fail(tooLarge(host, c.policy.MaxBytes), false)
	}
	capped := &capReader{r: resp.Body, remaining: c.policy.MaxBytes, max: c.policy.MaxBytes, host: host}
	peeked, err := peek(capped)
	if err != nil {
		return fail(classify(err, parent, ctx, host), false)
	}
	var mediaType, sniffed string
	if resp.StatusCode == http.StatusNotModified {
		// No content to judge: the cached copy passed the checks when it was fetched.
		mediaType = declaredType(resp.Header.Get("Content-Type"))
	} else {
		var mimeErr *Error
		mediaType, sniffed, mimeErr = c.checkMIME(resp.Header.Get("Content-Type"), peeked, host)
		if mimeErr != nil {
			return fail(mimeErr, false)
		}
	}
	timings, redirects := rec.snapshot()
	return &Response{
		Status:      resp.StatusCode,
		Header:      resp.Header,
		FinalURL:    resp.Request.URL.String(),
		Redirects:   redirects,
		Timings:     timings,
		MediaType:   mediaType,
		SniffedType: sniffed,
		Body:        newBody(peeked, capped, resp.Body, parent, ctx, cancel, host),
	}, nil
}
