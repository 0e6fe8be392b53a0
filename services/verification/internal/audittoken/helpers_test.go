package audittoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const (
	testIssuer   = "https://verification.test"
	testAudience = "trustlayer-audit"
)

// t0 is the tests' "now". Issue truncates to whole seconds, and a fraction here makes the tests meet
// that truncation.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 400_000_000, time.UTC)

// quiet swallows the JWKS fetch failures that tests cause on purpose.
var quiet = slog.New(slog.DiscardHandler)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func newEd25519(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newECDSA(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rsaKey is generated once: 2048-bit generation is slow under the race detector.
var rsaKey = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

func newRSA(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsaKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newIssuer(t testing.TB, key crypto.Signer, iss, aud string) *Issuer {
	t.Helper()
	i, err := NewIssuer(key, iss, aud)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func newVerifier(t testing.TB, own *Issuer, ext External, now time.Time) *Verifier {
	t.Helper()
	v, err := NewVerifier(t.Context(), own, ext, WithClock(fixedClock(now)), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func issue(t testing.TB, i *Issuer, scopes ...string) string {
	t.Helper()
	tok, _, err := i.Issue("alice@example.com", scopes, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// sign makes a token by hand, for the tokens Issue would never make.
func sign(t testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validClaims are the claims Issue would write at t0 for an hour.
func validClaims(iss, aud string) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":   iss,
		"aud":   aud,
		"sub":   "alice@example.com",
		"iat":   t0.Unix(),
		"nbf":   t0.Unix(),
		"exp":   t0.Add(time.Hour).Unix(),
		"jti":   "test-jti",
		"scope": ScopeAudit,
	}
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for n := 0; n < len(kv); n += 2 {
		if kv[n+1] == nil {
			delete(out, kv[n].(string))
		} else {
			out[kv[n].(string)] = kv[n+1]
		}
	}
	return out
}

// header decodes a token's header.
func header(t testing.TB, tok string) map[string]any {
	t.Helper()
	seg, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// payload decodes a token's claims.
func payload(t testing.TB, tok string) map[string]any {
	t.Helper()
	seg := strings.Split(tok, ".")[1]
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}
