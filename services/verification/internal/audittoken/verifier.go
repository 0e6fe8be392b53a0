package audittoken

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// ErrInvalid is every failure of Verify. Callers answer it with one 401 "Invalid or expired token",
// whatever the cause; the cause is wrapped inside for logs (errors.Is(err, ErrInvalid) holds).
var ErrInvalid = errors.New("invalid or expired token")

const (
	// expiryLeeway is the clock skew allowed on "exp". It makes up for Issue truncating "exp" to whole
	// seconds and stays small, because a client must not keep using a token past its expiry: a token
	// is refused at most ttl plus one second after it was issued.
	expiryLeeway = time.Second

	// notBeforeSkew is the clock skew allowed on "nbf". Issuers set "nbf" to the moment of issue, so an
	// issuer (or replica) whose clock runs a few seconds ahead would otherwise have its fresh tokens
	// refused; accepting a token early costs nothing, unlike accepting it late.
	notBeforeSkew = 30 * time.Second

	// maxTokenLen bounds what Verify decodes. Audit tokens are a few hundred bytes; external ones with
	// RSA signatures and many claims stay well under this.
	maxTokenLen = 8 << 10

	// defaultFetchTimeout bounds each request for the external JWKS, including the first one, which
	// NewVerifier waits for: an unreachable identity provider delays start-up by at most this.
	defaultFetchTimeout = 5 * time.Second

	// jwksRefreshInterval is how often the external JWKS is fetched in the background.
	jwksRefreshInterval = 15 * time.Minute

	// unknownKIDRefresh spaces the extra fetches made when a token names a kid the cached JWKS lacks:
	// often enough to pick up a rotated key, or to recover from a JWKS that was down at start, soon;
	// rarely enough that tokens with made-up kids cannot make the service hammer the provider.
	unknownKIDRefresh = time.Minute
)

// externalAlgs are the algorithms accepted from the external issuer: those Issue signs with and the RSA
// ones identity providers commonly use. The own issuer's tokens must use its key's one algorithm.
// Anything else — "none", HMAC (which would let a published public key serve as the shared secret),
// other curves — is refused before any key is looked up.
var externalAlgs = []string{"EdDSA", "ES256", "RS256", "PS256"}

// External is an external issuer whose tokens a Verifier also accepts: the URL of its JWK Set and the
// exact "iss" and "aud" its tokens must carry. All three are set, or none.
type External struct {
	JWKSURL  string
	Issuer   string
	Audience string
}

// Option changes a Verifier.
type Option func(*config)

type config struct {
	now          func() time.Time
	client       *http.Client
	fetchTimeout time.Duration
	logger       *slog.Logger
}

// WithClock sets the clock that "exp" and "nbf" are checked against (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithHTTPClient sets the client that fetches the external JWKS, for example one that refuses private
// addresses or goes through a proxy. The default is http.DefaultClient.
func WithHTTPClient(client *http.Client) Option { return func(c *config) { c.client = client } }

// WithFetchTimeout bounds each fetch of the external JWKS, and so how long NewVerifier waits for an
// unreachable one (default 5 s).
func WithFetchTimeout(d time.Duration) Option { return func(c *config) { c.fetchTimeout = d } }

// WithLogger sets where failed fetches of the external JWKS are logged (default slog.Default()). They
// are the only sign that external tokens are failing for want of keys.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// Verifier checks audit tokens of the service's own Issuer and, optionally, of one external issuer.
// It is safe for concurrent use.
type Verifier struct {
	now func() time.Time
	// peek reads the claims without checking anything, only to route the token by "iss".
	peek *jwt.Parser
	// routes holds, per accepted "iss", the parser (algorithms, iss, aud, exp) and keys for it.
	routes map[string]route
}

type route struct {
	parser   *jwt.Parser
	keys     func(ctx context.Context) jwt.Keyfunc
	external bool
}

// NewVerifier returns a Verifier that accepts the tokens of own (nil for none) and, when ext.JWKSURL
// is set, those of the external issuer, whose JWKS it fetches now and then refreshes in the
// background until ctx ends. An unreachable JWKS does not fail NewVerifier, which waits for it at most
// the fetch timeout: the service starts, external tokens fail verification until a later fetch
// succeeds, and the failed fetches are logged (see WithLogger).
func NewVerifier(ctx context.Context, own *Issuer, ext External, opts ...Option) (*Verifier, error) {
	cfg := config{now: time.Now, fetchTimeout: defaultFetchTimeout, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		return nil, errors.New("audittoken: verifier: nil logger")
	}
	if cfg.now == nil {
		return nil, errors.New("audittoken: verifier: nil clock")
	}
	if cfg.fetchTimeout <= 0 {
		return nil, fmt.Errorf("audittoken: verifier: fetch timeout %v is not positive", cfg.fetchTimeout)
	}
	hasExt := ext.JWKSURL != "" || ext.Issuer != "" || ext.Audience != ""
	if hasExt && (ext.JWKSURL == "" || ext.Issuer == "" || ext.Audience == "") {
		return nil, errors.New("audittoken: verifier: the external issuer needs its JWKS URL, issuer and audience, all three")
	}
	if own == nil && !hasExt {
		return nil, errors.New("audittoken: verifier: no issuer to accept tokens of")
	}
	if own != nil && hasExt && own.issuer == ext.Issuer {
		// Routing is by "iss": one name for two key sets would let either issuer's keys vouch for the other.
		return nil, fmt.Errorf("audittoken: verifier: the external issuer %q is also the service's own issuer", ext.Issuer)
	}

	v := &Verifier{
		now:    cfg.now,
		peek:   jwt.NewParser(jwt.WithStrictDecoding()),
		routes: make(map[string]route, 2),
	}
	if own != nil {
		v.routes[own.issuer] = route{
			parser: v.parser([]string{own.method.Alg()}, own.issuer, own.audience),
			keys:   func(context.Context) jwt.Keyfunc { return own.keyfunc },
		}
	}
	if hasExt {
		u, err := url.Parse(ext.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			// The URL is not echoed: operators sometimes put credentials in it.
			return nil, errors.New("audittoken: verifier: the external JWKS URL is not an absolute http(s) URL")
		}
		kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{ext.JWKSURL}, keyfunc.Override{
			Client:          cfg.client,
			HTTPTimeout:     cfg.fetchTimeout,
			RefreshInterval: jwksRefreshInterval,
			// Without these two, a token with an unknown kid could hold its request for a minute
			// waiting on the rate limiter and the fetch.
			RefreshUnknownKID: rate.NewLimiter(rate.Every(unknownKIDRefresh), 1),
			RateLimitWaitMax:  cfg.fetchTimeout,
			RefreshErrorHandlerFunc: func(string) func(context.Context, error) {
				return func(ctx context.Context, err error) {
					cfg.logger.WarnContext(ctx, "audit tokens: fetching the external issuer's JWKS failed; its tokens fail until a fetch succeeds",
						"issuer", ext.Issuer, "error", err)
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("audittoken: verifier: external JWKS: %w", err)
		}
		// The same storage, with keys meant for encryption refused for signatures (RFC 7517 §4.2).
		kf, err = keyfunc.New(keyfunc.Options{
			Ctx:          ctx,
			Storage:      kf.Storage(),
			UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
		})
		if err != nil {
			return nil, fmt.Errorf("audittoken: verifier: external JWKS: %w", err)
		}
		v.routes[ext.Issuer] = route{
			parser:   v.parser(externalAlgs, ext.Issuer, ext.Audience),
			keys:     kf.KeyfuncCtx,
			external: true,
		}
	}
	return v, nil
}

func (v *Verifier) parser(algs []string, issuer, audience string) *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods(algs),
		jwt.WithIssuer(issuer),
		jwt.WithAudience(audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(expiryLeeway),
		jwt.WithTimeFunc(v.now),
		// Padding bits that are not zero would let one signature be spelled several ways.
		jwt.WithStrictDecoding(),
	)
}

// keyfunc gives the Issuer's public key for a token that names it, or no kid at all.
func (i *Issuer) keyfunc(t *jwt.Token) (any, error) {
	if kid, ok := t.Header["kid"]; ok && kid != i.kid {
		return nil, errors.New("unknown kid")
	}
	return i.public, nil
}

// Claims are what a verified token says.
type Claims struct {
	// Subject is who the token was issued to ("sub"), never empty.
	Subject string
	// Issuer is the "iss" the token was verified for: the service's own or the external issuer.
	Issuer string
	// Scopes are the token's scopes as it states them, unknown ones included: tokens of an external
	// issuer often carry scopes meant for other services, and the routes check the one they need.
	Scopes []string
	// ExpiresAt is the token's "exp".
	ExpiresAt time.Time
	// ID is the token's "jti", when it has one (tokens of Issue always do).
	ID string
}

// HasScope reports whether the token carries scope s.
func (c Claims) HasScope(s string) bool { return slices.Contains(c.Scopes, s) }

// Verify checks token (without the "Bearer " prefix) and returns its claims. The token must be signed
// by the key of the issuer its "iss" names, with an algorithm allowed for that issuer, and carry that
// issuer's audience, an unexpired "exp" and a subject. ctx bounds the JWKS fetch that a token naming an
// unknown kid of the external issuer may cause. Every failure is ErrInvalid, with the cause wrapped.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	c, err := v.verify(ctx, token)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c, nil
}

func (v *Verifier) verify(ctx context.Context, token string) (Claims, error) {
	if len(token) > maxTokenLen {
		return Claims{}, fmt.Errorf("token of %d bytes is longer than %d", len(token), maxTokenLen)
	}
	// Only the base64url alphabet and dots: Go's base64 decoder skips line breaks, so without this
	// check a token with a line break inserted into its signature would still verify.
	if i := strings.IndexFunc(token, func(r rune) bool { return !isTokenChar(r) }); i >= 0 {
		return Claims{}, fmt.Errorf("token has a character outside base64url at offset %d", i)
	}

	var unverified tokenClaims
	if _, _, err := v.peek.ParseUnverified(token, &unverified); err != nil {
		return Claims{}, err
	}
	r, ok := v.routes[unverified.Issuer]
	if !ok {
		return Claims{}, errors.New("unknown issuer")
	}

	var tc tokenClaims
	if _, err := r.parser.ParseWithClaims(token, &tc, r.keys(ctx)); err != nil {
		return Claims{}, err
	}
	if tc.NotBefore != nil && v.now().Add(notBeforeSkew).Before(tc.NotBefore.Time) {
		return Claims{}, jwt.ErrTokenNotValidYet
	}
	if tc.Subject == "" {
		// Audit records name who ran an audit; a token that names no one cannot be attributed.
		return Claims{}, errors.New("token has no subject")
	}
	scopes := strings.Fields(tc.Scope)
	if r.external && tc.Scope == "" && len(tc.Scp) > 0 {
		var err error
		if scopes, err = parseScp(tc.Scp); err != nil {
			return Claims{}, err
		}
	}
	return Claims{
		Subject:   tc.Subject,
		Issuer:    tc.Issuer,
		Scopes:    scopes,
		ExpiresAt: tc.ExpiresAt.Time, // WithExpirationRequired made sure it is there.
		ID:        tc.ID,
	}, nil
}

// tokenClaims are the claims Verify reads. "scp" is read from external issuers only, some of which use
// it in place of "scope".
type tokenClaims struct {
	jwt.RegisteredClaims
	Scope string          `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// GetNotBefore hides "nbf" from golang-jwt, whose single leeway is too tight for it; verify checks
// "nbf" with notBeforeSkew instead.
func (c tokenClaims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// parseScp reads "scp", which identity providers write as a space-separated string (like "scope") or
// as an array of strings.
func parseScp(raw json.RawMessage) ([]string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return strings.Fields(s), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`"scp" is neither a string nor an array of strings`)
	}
	return slices.DeleteFunc(list, func(s string) bool { return s == "" }), nil
}

func isTokenChar(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}
