package audittoken

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzVerify checks that Verify never panics, answers every failure with ErrInvalid, and accepts no
// token but the ones issued. The key is Ed25519, whose signatures (unlike ECDSA's) have one valid
// spelling, and Verify refuses non-canonical base64, so an accepted string must be an issued token
// byte for byte.
func FuzzVerify(f *testing.F) {
	key := newEd25519(f)
	own := newIssuer(f, key, testIssuer, testAudience)
	v := newVerifier(f, own, External{}, t0)
	issued := []string{issue(f, own, ScopeAudit, ScopeReadiness), issue(f, own, ScopeAudit)}

	a, b := strings.Split(issued[0], "."), strings.Split(issued[1], ".")
	f.Add(issued[0])
	f.Add(issued[1])
	f.Add(issued[0] + "A")
	f.Add(issued[0][:len(issued[0])-1])
	f.Add(a[0] + "." + b[1] + "." + a[2])
	f.Add(a[0] + "." + a[1])
	f.Add(a[0] + "." + a[1] + ".")
	f.Add(noneHeader(own.KeyID()) + "." + a[1] + ".")
	f.Add(sign(f, jwt.SigningMethodEdDSA, newEd25519(f), own.KeyID(), validClaims(testIssuer, testAudience)))
	f.Add(sign(f, jwt.SigningMethodHS256, []byte(key.Public().(ed25519.PublicKey)), own.KeyID(), validClaims(testIssuer, testAudience)))
	f.Add("")
	f.Add("..")
	f.Add("e30.e30.")
	f.Add("not.a.jwt")

	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(t.Context(), token)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, not ErrInvalid", err)
			}
			return
		}
		for _, tok := range issued {
			if token == tok {
				if c.Subject == "" || len(c.Scopes) == 0 {
					t.Fatalf("issued token verified to %+v", c)
				}
				return
			}
		}
		t.Fatalf("accepted a token that was never issued: %q", token)
	})
}
