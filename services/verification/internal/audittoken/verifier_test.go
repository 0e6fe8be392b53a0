package audittoken

import (
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// mustInvalid fails unless err is ErrInvalid and says nothing more to a client than ErrInvalid does.
func mustInvalid(t *testing.T, c Claims, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if !strings.HasPrefix(err.Error(), ErrInvalid.Error()+": ") {
		t.Errorf("err = %q, want ErrInvalid with its cause wrapped", err)
	}
	if c.Subject != "" || c.Scopes != nil || !c.ExpiresAt.IsZero() {
		t.Errorf("claims %+v returned with an error", c)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	edKey := newEd25519(t)
	own := newIssuer(t, edKey, testIssuer, testAudience)
	valid := issue(t, own, ScopeAudit)
	claims := validClaims(testIssuer, testAudience)
	kid := own.KeyID()
	parts := strings.Split(valid, ".")

	pubPEM := func(pub any) []byte {
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	jwks, _ := own.JWKS()

	tampered := func() string {
		p := strings.Replace(string(mustDecode(t, parts[1])), ScopeAudit, ScopeReadiness, 1)
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(p)) + "." + parts[2]
	}()
	// The last character of an Ed25519 signature carries two bits of the signature and four zero bits;
	// setting one of the zero bits spells the same signature differently.
	respelled := func() string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		last := strings.IndexByte(alphabet, valid[len(valid)-1])
		return valid[:len(valid)-1] + string(alphabet[last^1])
	}()
	if string(mustDecode(t, strings.Split(respelled, ".")[2])) != string(mustDecode(t, parts[2])) {
		t.Fatal("the respelled signature decodes differently; the test is wrong")
	}
	otherAud := newIssuer(t, edKey, testIssuer, "someone-else")
	otherIss := newIssuer(t, edKey, "https://impostor.test", testAudience)
	p256 := newECDSA(t, elliptic.P256())

	tests := []struct {
		name  string
		token string
		now   time.Time
	}{
		{"expired", valid, t0.Add(2 * time.Hour)},
		{"expired, past the leeway", valid, t0.Truncate(time.Second).Add(time.Hour + time.Second)},
		{"not yet valid", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "nbf", t0.Add(time.Minute).Unix())), t0},
		{"wrong audience", issue(t, otherAud, ScopeAudit), t0},
		{"audience list without ours", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "aud", []string{"a", "b"})), t0},
		{"no audience", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "aud", nil)), t0},
		{"wrong issuer", issue(t, otherIss, ScopeAudit), t0},
		{"issuer differing in case", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "iss", strings.ToUpper(testIssuer))), t0},
		{"no issuer", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "iss", nil)), t0},
		{"no exp", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "exp", nil)), t0},
		{"exp not a number", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "exp", "tomorrow")), t0},
		{"no subject", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "sub", nil)), t0},
		{"scope as an array", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "scope", []string{ScopeAudit})), t0},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims), t0},
		{"alg none, signature stripped", noneHeader(kid) + "." + parts[1] + ".", t0},
		{"HS256 keyed with the raw public key", sign(t, jwt.SigningMethodHS256, []byte(edKey.Public().(ed25519.PublicKey)), kid, claims), t0},
		{"HS256 keyed with the public key PEM", sign(t, jwt.SigningMethodHS256, pubPEM(edKey.Public()), kid, claims), t0},
		{"HS256 keyed with the JWKS", sign(t, jwt.SigningMethodHS256, jwks, kid, claims), t0},
		{"tampered payload", tampered, t0},
		{"signature respelled with non-zero padding bits", respelled, t0},
		{"signature of another token", parts[0] + "." + strings.Split(issue(t, own, ScopeReadiness), ".")[1] + "." + parts[2], t0},
		{"another key with our kid", sign(t, jwt.SigningMethodEdDSA, newEd25519(t), kid, claims), t0},
		{"ES256 with our kid", sign(t, jwt.SigningMethodES256, p256, kid, claims), t0},
		{"RS256 for our issuer", sign(t, jwt.SigningMethodRS256, newRSA(t), kid, claims), t0},
		{"our key with another kid", sign(t, jwt.SigningMethodEdDSA, edKey, "another", claims), t0},
		{"kid not a string", signHeader(t, edKey, map[string]any{"kid": 7}, claims), t0},
		{"empty", "", t0},
		{"not.a.jwt", "not.a.jwt", t0},
		{"two segments", "a.b", t0},
		{"two segments of a real token", parts[0] + "." + parts[1], t0},
		{"four segments", valid + ".e30", t0},
		{"bearer prefix left on", "Bearer " + valid, t0},
		{"trailing newline", valid + "\n", t0},
		{"line break inside the signature", valid[:len(valid)-10] + "\n" + valid[len(valid)-10:], t0},
		{"padding added", valid + "==", t0},
		{"too long", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "pad", strings.Repeat("x", maxTokenLen))), t0},
	}
	v := func(now time.Time) *Verifier { return newVerifier(t, own, External{}, now) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := v(tt.now).Verify(t.Context(), tt.token)
			mustInvalid(t, c, err)
		})
	}
}

func TestVerifyAccepts(t *testing.T) {
	t.Parallel()
	edKey := newEd25519(t)
	own := newIssuer(t, edKey, testIssuer, testAudience)
	claims := validClaims(testIssuer, testAudience)
	kid := own.KeyID()
	tests := []struct {
		name   string
		token  string
		now    time.Time
		scopes []string
	}{
		{"issued", issue(t, own, ScopeAudit), t0, []string{ScopeAudit}},
		{"in the last second of the leeway", issue(t, own, ScopeAudit), t0.Truncate(time.Second).Add(time.Hour + time.Second - time.Millisecond), []string{ScopeAudit}},
		{"nbf a little ahead of our clock", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "nbf", t0.Add(20*time.Second).Unix())), t0, []string{ScopeAudit}},
		{"no kid", sign(t, jwt.SigningMethodEdDSA, edKey, "", claims), t0, []string{ScopeAudit}},
		{"no nbf", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "nbf", nil)), t0, []string{ScopeAudit}},
		{"audience list with ours", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "aud", []string{"other", testAudience})), t0, []string{ScopeAudit}},
		// Scope values are carried as they are; the routes decide what a scope allows.
		{"unknown scope carried", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "scope", "service:audit  other:thing")), t0, []string{ScopeAudit, "other:thing"}},
		{"no scope", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "scope", nil)), t0, nil},
		// "scp" is read from external issuers only.
		{"scp ignored for our issuer", sign(t, jwt.SigningMethodEdDSA, edKey, kid, with(claims, "scope", nil, "scp", ScopeAudit)), t0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := newVerifier(t, own, External{}, tt.now).Verify(t.Context(), tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject != "alice@example.com" || !slices.Equal(c.Scopes, tt.scopes) {
				t.Errorf("claims = %+v, want scopes %v", c, tt.scopes)
			}
		})
	}
}

// TestVerifyShortToken is the acceptance test's case: a one-second token works at once and is refused
// 2.5 s later, wherever in its second it was issued.
func TestVerifyShortToken(t *testing.T) {
	t.Parallel()
	own := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	base := t0.Truncate(time.Second)
	for _, frac := range []time.Duration{0, 400 * time.Millisecond, 999 * time.Millisecond} {
		issued := base.Add(frac)
		tok, _, err := own.Issue("bob", []string{ScopeAudit}, time.Second, issued)
		if err != nil {
			t.Fatal(err)
		}
		for _, after := range []time.Duration{0, 999 * time.Millisecond} {
			if _, err := newVerifier(t, own, External{}, issued.Add(after)).Verify(t.Context(), tok); err != nil {
				t.Errorf("issued at +%v, checked %v later: %v", frac, after, err)
			}
		}
		c, err := newVerifier(t, own, External{}, issued.Add(2500*time.Millisecond)).Verify(t.Context(), tok)
		mustInvalid(t, c, err)
		if !errors.Is(err, jwt.ErrTokenExpired) {
			t.Errorf("cause = %v, want jwt.ErrTokenExpired for the logs", err)
		}
	}
}

// TestVerifyClockMoves checks that the Verifier reads its clock at each call.
func TestVerifyClockMoves(t *testing.T) {
	t.Parallel()
	own := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	tok := issue(t, own, ScopeAudit)
	now := t0
	v, err := NewVerifier(t.Context(), own, External{}, WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	c, err := v.Verify(t.Context(), tok)
	mustInvalid(t, c, err)
}

func TestVerifyOfAnotherServiceKey(t *testing.T) {
	t.Parallel()
	// Two services that share issuer and audience names but not keys must not accept each other's
	// tokens, with or without the kid.
	a := newIssuer(t, newECDSA(t, elliptic.P256()), testIssuer, testAudience)
	b := newIssuer(t, newECDSA(t, elliptic.P256()), testIssuer, testAudience)
	tok := issue(t, b, ScopeAudit)
	c, err := newVerifier(t, a, External{}, t0).Verify(t.Context(), tok)
	mustInvalid(t, c, err)
}

func mustDecode(t *testing.T, seg string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func noneHeader(kid string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"` + kid + `"}`))
}

// signHeader signs claims with EdDSA under a header with extra members.
func signHeader(t *testing.T, key ed25519.PrivateKey, extra map[string]any, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	for k, v := range extra {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
