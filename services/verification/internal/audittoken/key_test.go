package audittoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "PRIVATE KEY", der)
}

func sec1(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pemOf(t, "EC PRIVATE KEY", der)
}

func TestParseSigningKeyAccepts(t *testing.T) {
	t.Parallel()
	ed := newEd25519(t)
	p256 := newECDSA(t, elliptic.P256())
	// What `openssl ecparam -name prime256v1 -genkey` writes: the curve's parameters, then the key.
	params := pemOf(t, "EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})
	tests := []struct {
		name string
		pem  []byte
		want any
		alg  string
	}{
		{"PKCS#8 Ed25519", pkcs8(t, ed), ed, "EdDSA"},
		{"PKCS#8 P-256", pkcs8(t, p256), p256, "ES256"},
		{"SEC1 P-256", sec1(t, p256), p256, "ES256"},
		{"SEC1 P-256 after EC PARAMETERS", append(params, sec1(t, p256)...), p256, "ES256"},
		{"surrounded by text and blank lines", []byte("key for staging:\n\n" + string(pkcs8(t, ed)) + "\n\n"), ed, "EdDSA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := ParseSigningKey(tt.pem)
			if err != nil {
				t.Fatal(err)
			}
			if !k.(interface{ Equal(crypto.PrivateKey) bool }).Equal(tt.want) {
				t.Error("parsed key differs from the one encoded")
			}
			// The key is usable end to end.
			i := newIssuer(t, k, testIssuer, testAudience)
			tok := issue(t, i, ScopeAudit)
			if header(t, tok)["alg"] != tt.alg {
				t.Errorf("alg = %v, want %s", header(t, tok)["alg"], tt.alg)
			}
			if _, err := newVerifier(t, i, External{}, t0).Verify(t.Context(), tok); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParseSigningKeyRefuses(t *testing.T) {
	t.Parallel()
	rsa := newRSA(t)
	p384 := newECDSA(t, elliptic.P384())
	ed := pkcs8(t, newEd25519(t))
	block, _ := pem.Decode(ed)
	truncated := pemOf(t, "PRIVATE KEY", block.Bytes[:len(block.Bytes)-4])
	tests := []struct {
		name string
		pem  []byte
		want string
	}{
		{"empty", nil, "no PEM block"},
		{"garbage", []byte("not a key at all"), "no PEM block"},
		{"base64 without armour", []byte(strings.Join(strings.Split(string(ed), "\n")[1:2], "")), "no PEM block"},
		{"line breaks escaped", []byte(strings.ReplaceAll(string(ed), "\n", `\n`)), `literal \n`},
		{"PKCS#8 RSA", pkcs8(t, rsa), "RSA"},
		{"PKCS#1 RSA", pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsa)), "RSA"},
		{"PKCS#8 P-384", pkcs8(t, p384), "P-384"},
		{"SEC1 P-384", sec1(t, p384), "P-384"},
		{"public key", pemOf(t, "PUBLIC KEY", mustPKIX(t, rsa.Public())), `"PUBLIC KEY"`},
		{"certificate", pemOf(t, "CERTIFICATE", []byte{0x30, 0x03, 0x02, 0x01, 0x01}), `"CERTIFICATE"`},
		{"encrypted", pemOf(t, "ENCRYPTED PRIVATE KEY", []byte{0x30, 0x00}), "encrypted"},
		{"PKCS#8 block of garbage", pemOf(t, "PRIVATE KEY", []byte("garbage garbage garbage")), "not a valid private key"},
		{"PKCS#8 block truncated", truncated, "not a valid private key"},
		{"SEC1 block of garbage", pemOf(t, "EC PRIVATE KEY", []byte("garbage garbage garbage")), "not a valid EC private key"},
		{"two keys", append(pkcs8(t, newEd25519(t)), ed...), "more than one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := ParseSigningKey(tt.pem)
			if err == nil {
				t.Fatalf("ParseSigningKey = %T, want an error", k)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("err = %q, want it to mention %s", msg, tt.want)
			}
			// No line of the PEM text, armour aside, and no stretch of its base64 shows in the error.
			for _, line := range strings.Split(string(tt.pem), "\n") {
				line = strings.TrimSpace(line)
				if len(line) >= 8 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line[:8]) {
					t.Errorf("err %q quotes the key text %q", msg, line)
				}
			}
		})
	}
}

func mustPKIX(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.(ed25519.PrivateKey); !ok {
		t.Errorf("GenerateKey = %T, want ed25519.PrivateKey", a)
	}
	ia, ib := newIssuer(t, a, testIssuer, testAudience), newIssuer(t, b, testIssuer, testAudience)
	if ia.KeyID() == ib.KeyID() {
		t.Error("two generated keys share a kid")
	}
	tok, _, err := ia.Issue("x", []string{ScopeAudit}, time.Minute, t0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newVerifier(t, ib, External{}, t0).Verify(t.Context(), tok)
	mustInvalid(t, c, err)
}
