package audittoken

import (
	"context"
	"crypto"
	"crypto/elliptic"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

const (
	extIssuer   = "https://idp.example.test/"
	extAudience = "api://trustlayer-verification"
)

// extKey is a key of the external issuer as its JWKS publishes it.
type extKey struct {
	kid string
	alg jwkset.ALG // empty: the JWK names no algorithm
	use jwkset.USE
	key crypto.Signer
}

// jwksServer serves the JWKS of the keys set last, and counts its requests.
type jwksServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	requests int
}

func newJWKSServer(t *testing.T, keys ...extKey) *jwksServer {
	t.Helper()
	s := &jwksServer{}
	s.set(t, keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(t *testing.T, keys ...extKey) {
	t.Helper()
	store := jwkset.NewMemoryStorage()
	for _, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.key.Public(), jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: k.kid, ALG: k.alg, USE: k.use},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.KeyWrite(t.Context(), jwk); err != nil {
			t.Fatal(err)
		}
	}
	body, err := store.JSONPublic(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

func (s *jwksServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func TestExternalIssuer(t *testing.T) {
	t.Parallel()
	es := extKey{kid: "es-1", alg: jwkset.AlgES256, use: jwkset.UseSig, key: newECDSA(t, elliptic.P256())}
	rs := extKey{kid: "rs-1", alg: jwkset.AlgRS256, use: jwkset.UseSig, key: newRSA(t)}
	ps := extKey{kid: "ps-1", key: newRSA(t)} // no alg and no use in its JWK, as some providers publish
	ed := extKey{kid: "ed-1", alg: jwkset.AlgEdDSA, key: newEd25519(t)}
	enc := extKey{kid: "enc-1", alg: jwkset.AlgES256, use: jwkset.UseEnc, key: newECDSA(t, elliptic.P256())}
	srv := newJWKSServer(t, es, rs, ps, ed, enc)

	ownKey := newEd25519(t)
	own := newIssuer(t, ownKey, testIssuer, testAudience)
	v := newVerifier(t, own, External{JWKSURL: srv.URL, Issuer: extIssuer, Audience: extAudience}, t0)

	claims := with(validClaims(extIssuer, extAudience), "sub", "client-42", "scope", nil)
	tests := []struct {
		name   string
		token  string
		scopes []string // nil with ok false: must be refused
		ok     bool
	}{
		{"ES256", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "scope", "service:audit openid")), []string{ScopeAudit, "openid"}, true},
		{"RS256", sign(t, jwt.SigningMethodRS256, rs.key, rs.kid, with(claims, "scp", "service:readiness")), []string{ScopeReadiness}, true},
		{"PS256 under a JWK without alg", sign(t, jwt.SigningMethodPS256, ps.key, ps.kid, with(claims, "scp", []string{ScopeAudit, ScopeReadiness})), []string{ScopeAudit, ScopeReadiness}, true},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, ed.key, ed.kid, claims), nil, true},
		{"scope wins over scp", sign(t, jwt.SigningMethodEdDSA, ed.key, ed.kid, with(claims, "scope", ScopeAudit, "scp", ScopeReadiness)), []string{ScopeAudit}, true},
		{"no kid: any published key", sign(t, jwt.SigningMethodES256, es.key, "", claims), nil, true},

		{"wrong audience", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "aud", "someone-else")), nil, false},
		{"our audience", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "aud", testAudience)), nil, false},
		{"issuer without its trailing slash", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "iss", "https://idp.example.test")), nil, false},
		{"expired", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "exp", t0.Add(-time.Minute).Unix())), nil, false},
		{"PS256 under a key published for RS256", sign(t, jwt.SigningMethodPS256, rs.key, rs.kid, claims), nil, false},
		{"RS384", sign(t, jwt.SigningMethodRS384, rs.key, rs.kid, claims), nil, false},
		{"ES384 refused before any key", sign(t, jwt.SigningMethodES384, newECDSA(t, elliptic.P384()), es.kid, claims), nil, false},
		{"HS256 keyed with a published key's JWKS", sign(t, jwt.SigningMethodHS256, srv.body, es.kid, claims), nil, false},
		{"key published for encryption", sign(t, jwt.SigningMethodES256, enc.key, enc.kid, claims), nil, false},
		{"scp neither string nor array", sign(t, jwt.SigningMethodES256, es.key, es.kid, with(claims, "scp", 7)), nil, false},
		// Our key must not vouch for the external issuer, nor its keys for us.
		{"our key claiming the external issuer", sign(t, jwt.SigningMethodEdDSA, ownKey, own.KeyID(), claims), nil, false},
		{"our key claiming the external issuer under its kid", sign(t, jwt.SigningMethodEdDSA, ownKey, ed.kid, claims), nil, false},
		{"external key claiming our issuer", sign(t, jwt.SigningMethodEdDSA, ed.key, own.KeyID(), validClaims(testIssuer, testAudience)), nil, false},
		{"external key claiming our issuer under its kid", sign(t, jwt.SigningMethodEdDSA, ed.key, ed.kid, validClaims(testIssuer, testAudience)), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := v.Verify(t.Context(), tt.token)
			if !tt.ok {
				mustInvalid(t, c, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Issuer != extIssuer || c.Subject != "client-42" || !slices.Equal(c.Scopes, tt.scopes) {
				t.Errorf("claims = %+v, want scopes %v", c, tt.scopes)
			}
		})
	}

	// Our own tokens still verify beside the external issuer's.
	if _, err := v.Verify(t.Context(), issue(t, own, ScopeAudit)); err != nil {
		t.Errorf("own token: %v", err)
	}
}

// TestExternalKeyRotation: a token naming a kid the cached JWKS lacks makes the Verifier fetch the
// JWKS again, so a provider's new key is accepted without waiting for the periodic refresh.
func TestExternalKeyRotation(t *testing.T) {
	t.Parallel()
	old := extKey{kid: "old", alg: jwkset.AlgES256, key: newECDSA(t, elliptic.P256())}
	next := extKey{kid: "next", alg: jwkset.AlgES256, key: newECDSA(t, elliptic.P256())}
	srv := newJWKSServer(t, old)
	v := newVerifier(t, nil, External{JWKSURL: srv.URL, Issuer: extIssuer, Audience: extAudience}, t0)
	claims := validClaims(extIssuer, extAudience)

	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, old.key, old.kid, claims)); err != nil {
		t.Fatal(err)
	}
	srv.set(t, next)
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, next.key, next.kid, claims)); err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	// The old key went with the refresh.
	c, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, old.key, old.kid, claims))
	mustInvalid(t, c, err)

	// Made-up kids do not each cost a fetch: they are rate-limited, and fail without waiting for the
	// limiter.
	before := srv.count()
	start := time.Now()
	for range 20 {
		c, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, next.key, "made-up", claims))
		mustInvalid(t, c, err)
	}
	if n := srv.count() - before; n > 1 {
		t.Errorf("20 unknown kids made %d fetches", n)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("20 unknown kids took %v", d)
	}
}

func TestExternalJWKSDown(t *testing.T) {
	t.Parallel()
	key := extKey{kid: "k", alg: jwkset.AlgES256, key: newECDSA(t, elliptic.P256())}
	claims := validClaims(extIssuer, extAudience)
	extToken := sign(t, jwt.SigningMethodES256, key.key, key.kid, claims)

	// A port that refuses connections.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/jwks.json"
	l.Close()

	// A server that accepts and never answers.
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); silent.Close() })

	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	t.Cleanup(notJSON.Close)

	tests := []struct {
		name string
		url  string
	}{
		{"connection refused", refused},
		{"no answer", silent.URL},
		{"404", notFound.URL},
		{"not JSON", notJSON.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			own := newIssuer(t, newEd25519(t), testIssuer, testAudience)
			var logs lockedBuffer
			start := time.Now()
			v, err := NewVerifier(t.Context(), own, External{JWKSURL: tt.url, Issuer: extIssuer, Audience: extAudience},
				WithClock(fixedClock(t0)), WithFetchTimeout(300*time.Millisecond), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatalf("NewVerifier: %v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("NewVerifier took %v", d)
			}
			start = time.Now()
			c, err := v.Verify(t.Context(), extToken)
			mustInvalid(t, c, err)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Verify took %v", d)
			}
			if _, err := v.Verify(t.Context(), issue(t, own, ScopeAudit)); err != nil {
				t.Errorf("own token: %v", err)
			}
			if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, extIssuer) {
				t.Errorf("no warning of the failed fetch logged: %q", l)
			}
		})
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestExternalRecovers: a JWKS that was down at start is fetched again when a token needs it.
func TestExternalRecovers(t *testing.T) {
	t.Parallel()
	key := extKey{kid: "k", alg: jwkset.AlgES256, key: newECDSA(t, elliptic.P256())}
	var mu sync.Mutex
	up := false
	srv := newJWKSServer(t, key)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	v := newVerifier(t, nil, External{JWKSURL: gate.URL, Issuer: extIssuer, Audience: extAudience}, t0)
	mu.Lock()
	up = true
	mu.Unlock()
	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodES256, key.key, key.kid, validClaims(extIssuer, extAudience))); err != nil {
		t.Fatalf("after the JWKS came up: %v", err)
	}
}

func TestNewVerifierRefuses(t *testing.T) {
	t.Parallel()
	own := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	tests := []struct {
		name string
		own  *Issuer
		ext  External
		opts []Option
	}{
		{"nothing to accept", nil, External{}, nil},
		{"external without JWKS URL", own, External{Issuer: extIssuer, Audience: extAudience}, nil},
		{"external without issuer", own, External{JWKSURL: "https://idp.test/jwks", Audience: extAudience}, nil},
		{"external without audience", own, External{JWKSURL: "https://idp.test/jwks", Issuer: extIssuer}, nil},
		{"external issuer is ours", own, External{JWKSURL: "https://idp.test/jwks", Issuer: testIssuer, Audience: extAudience}, nil},
		{"relative JWKS URL", own, External{JWKSURL: "/jwks.json", Issuer: extIssuer, Audience: extAudience}, nil},
		{"file JWKS URL", own, External{JWKSURL: "file:///etc/jwks.json", Issuer: extIssuer, Audience: extAudience}, nil},
		{"nil clock", own, External{}, []Option{WithClock(nil)}},
		{"zero fetch timeout", own, External{}, []Option{WithFetchTimeout(0)}},
		{"nil logger", own, External{}, []Option{WithLogger(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			if v, err := NewVerifier(ctx, tt.own, tt.ext, tt.opts...); err == nil {
				t.Errorf("NewVerifier = %v, want an error", v)
			}
		})
	}
}
