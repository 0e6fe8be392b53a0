package audittoken

import (
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

func TestIssueVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  crypto.Signer
		alg  string
		kty  string
		crv  string
	}{
		{"Ed25519", newEd25519(t), "EdDSA", "OKP", "Ed25519"},
		{"ECDSA P-256", newECDSA(t, elliptic.P256()), "ES256", "EC", "P-256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			i := newIssuer(t, tt.key, testIssuer, testAudience)
			tok, exp, err := i.Issue("alice@example.com", []string{ScopeReadiness, ScopeAudit}, 10*time.Minute, t0)
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(10 * time.Minute).Truncate(time.Second); !exp.Equal(want) {
				t.Errorf("expires = %v, want %v", exp, want)
			}

			h := header(t, tok)
			if h["alg"] != tt.alg || h["typ"] != "JWT" || h["kid"] != i.KeyID() {
				t.Errorf("header = %v, want alg %s, typ JWT, kid %s", h, tt.alg, i.KeyID())
			}
			p := payload(t, tok)
			if p["iss"] != testIssuer || p["aud"] != testAudience || p["sub"] != "alice@example.com" ||
				p["scope"] != "service:audit service:readiness" || p["jti"] == "" || p["jti"] == nil ||
				p["iat"] != float64(t0.Unix()) || p["nbf"] != float64(t0.Unix()) || p["exp"] != float64(exp.Unix()) {
				t.Errorf("payload = %v", p)
			}

			var set struct {
				Keys []map[string]any `json:"keys"`
			}
			raw, err := i.JWKS()
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &set); err != nil {
				t.Fatal(err)
			}
			if len(set.Keys) != 1 {
				t.Fatalf("JWKS has %d keys, want 1: %s", len(set.Keys), raw)
			}
			k := set.Keys[0]
			if k["kid"] != i.KeyID() || k["alg"] != tt.alg || k["kty"] != tt.kty || k["crv"] != tt.crv || k["use"] != "sig" {
				t.Errorf("JWK = %v", k)
			}
			for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
				if _, ok := k[private]; ok {
					t.Errorf("JWK holds private member %q: %s", private, raw)
				}
			}

			v := newVerifier(t, i, External{}, t0.Add(5*time.Minute))
			c, err := v.Verify(t.Context(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if c.Subject != "alice@example.com" || c.Issuer != testIssuer || !exp.Equal(c.ExpiresAt) || c.ID != p["jti"] ||
				!slices.Equal(c.Scopes, []string{ScopeAudit, ScopeReadiness}) {
				t.Errorf("claims = %+v", c)
			}
			if !c.HasScope(ScopeAudit) || !c.HasScope(ScopeReadiness) || c.HasScope("service:admin") {
				t.Errorf("HasScope wrong for %v", c.Scopes)
			}

			// What the service publishes is enough for anyone else to verify its tokens.
			kf, err := keyfunc.NewJWKSetJSON(raw)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := jwt.Parse(tok, kf.Keyfunc, jwt.WithTimeFunc(fixedClock(t0))); err != nil {
				t.Errorf("a third party verifying with the JWKS: %v", err)
			}
		})
	}
}

func TestIssueScopes(t *testing.T) {
	t.Parallel()
	i := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	v := newVerifier(t, i, External{}, t0)
	tests := []struct {
		scopes []string
		want   []string
	}{
		{[]string{ScopeAudit}, []string{ScopeAudit}},
		{[]string{ScopeReadiness}, []string{ScopeReadiness}},
		{[]string{ScopeReadiness, ScopeAudit, ScopeReadiness}, []string{ScopeAudit, ScopeReadiness}},
	}
	for _, tt := range tests {
		tok, _, err := i.Issue("bob", tt.scopes, time.Minute, t0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.Verify(t.Context(), tok)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Scopes, tt.want) {
			t.Errorf("Issue(%v): scopes %v, want %v", tt.scopes, c.Scopes, tt.want)
		}
	}
}

func TestIssueUniqueIDs(t *testing.T) {
	t.Parallel()
	i := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	a, b := issue(t, i, ScopeAudit), issue(t, i, ScopeAudit)
	if a == b || payload(t, a)["jti"] == payload(t, b)["jti"] {
		t.Errorf("two tokens issued alike share their jti: %s", a)
	}
}

func TestIssueRefuses(t *testing.T) {
	t.Parallel()
	i := newIssuer(t, newEd25519(t), testIssuer, testAudience)
	tests := []struct {
		name    string
		subject string
		scopes  []string
		ttl     time.Duration
		want    string
	}{
		{"empty subject", "", []string{ScopeAudit}, time.Minute, "subject"},
		{"no scopes", "bob", nil, time.Minute, "scope"},
		{"unknown scope", "bob", []string{ScopeAudit, "service:admin"}, time.Minute, `"service:admin"`},
		{"scope list in one string", "bob", []string{ScopeAudit + " " + ScopeReadiness}, time.Minute, "unknown scope"},
		{"zero ttl", "bob", []string{ScopeAudit}, 0, "ttl"},
		{"negative ttl", "bob", []string{ScopeAudit}, -time.Second, "ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tok, exp, err := i.Issue(tt.subject, tt.scopes, tt.ttl, t0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %s", err, tt.want)
			}
			if tok != "" || !exp.IsZero() {
				t.Errorf("got token %q, expiry %v alongside the error", tok, exp)
			}
		})
	}
}

// signerOnly hides the concrete key type behind crypto.Signer, like a KMS-backed key.
type signerOnly struct{ crypto.Signer }

func (s signerOnly) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	return s.Signer.Sign(r, d, o)
}

func TestNewIssuerRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		key      crypto.Signer
		iss, aud string
	}{
		{"nil key", nil, testIssuer, testAudience},
		{"no issuer", newEd25519(t), "", testAudience},
		{"no audience", newEd25519(t), testIssuer, ""},
		{"RSA", newRSA(t), testIssuer, testAudience},
		{"P-384", newECDSA(t, elliptic.P384()), testIssuer, testAudience},
		{"ECDSA behind an interface", signerOnly{newECDSA(t, elliptic.P256())}, testIssuer, testAudience},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if i, err := NewIssuer(tt.key, tt.iss, tt.aud); err == nil {
				t.Errorf("NewIssuer = %v, want an error", i)
			}
		})
	}
	// Ed25519 signs through crypto.Signer in golang-jwt, so a wrapped one works.
	if _, err := NewIssuer(signerOnly{newEd25519(t)}, testIssuer, testAudience); err != nil {
		t.Errorf("wrapped Ed25519: %v", err)
	}
}

// TestThumbprint checks the kid against RFC 8037 Appendix A.3 and, for EC keys, against the RFC 7638
// recipe computed independently (encoding/json sorts map keys).
func TestThumbprint(t *testing.T) {
	t.Parallel()
	x, _ := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	got, err := thumbprint(ed25519.PublicKey(x))
	if err != nil {
		t.Fatal(err)
	}
	if want := "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"; got != want {
		t.Errorf("Ed25519 thumbprint = %s, want %s (RFC 8037 A.3)", got, want)
	}

	k := newECDSA(t, elliptic.P256())
	pub, err := k.PublicKey.Bytes() // uncompressed point: 0x04 || X || Y, 32 bytes each
	if err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(map[string]string{
		"kty": "EC", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(pub[1:33]),
		"y": base64.RawURLEncoding.EncodeToString(pub[33:]),
	})
	sum := sha256.Sum256(m)
	i := newIssuer(t, k, testIssuer, testAudience)
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); i.KeyID() != want {
		t.Errorf("P-256 kid = %s, want %s", i.KeyID(), want)
	}
	if newIssuer(t, k, "other", "other").KeyID() != i.KeyID() {
		t.Error("the kid depends on more than the key")
	}
}
