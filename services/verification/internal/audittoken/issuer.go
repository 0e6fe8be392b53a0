package audittoken

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// Scopes a token may carry.
const (
	// ScopeAudit lets a caller run MCP audits and read audits.
	ScopeAudit = "service:audit"
	// ScopeReadiness lets a caller run readiness audits.
	ScopeReadiness = "service:readiness"
)

// Scopes are all the scopes Issue accepts, in the order Issue writes them.
var Scopes = []string{ScopeAudit, ScopeReadiness}

// Issuer signs audit tokens with one private key.
type Issuer struct {
	key      crypto.Signer
	public   crypto.PublicKey
	method   jwt.SigningMethod
	kid      string
	issuer   string
	audience string
	jwks     []byte
}

// NewIssuer returns an Issuer that signs with key: EdDSA for an Ed25519 key, ES256 for an ECDSA P-256
// key (which must be an *ecdsa.PrivateKey, as golang-jwt signs with nothing else). issuer and audience
// become the tokens' "iss" and "aud", and a Verifier checks both exactly.
func NewIssuer(key crypto.Signer, issuer, audience string) (*Issuer, error) {
	if key == nil {
		return nil, errors.New("audittoken: issuer: no key")
	}
	if issuer == "" || audience == "" {
		return nil, errors.New("audittoken: issuer: issuer and audience are both required")
	}
	i := &Issuer{key: key, public: key.Public(), issuer: issuer, audience: audience}
	var alg jwkset.ALG
	switch pub := i.public.(type) {
	case ed25519.PublicKey:
		i.method, alg = jwt.SigningMethodEdDSA, jwkset.AlgEdDSA
	case *ecdsa.PublicKey:
		if pub.Curve != elliptic.P256() {
			return nil, fmt.Errorf("audittoken: issuer: ECDSA curve %s is not supported; use P-256", pub.Curve.Params().Name)
		}
		if _, ok := key.(*ecdsa.PrivateKey); !ok {
			return nil, fmt.Errorf("audittoken: issuer: ES256 needs an *ecdsa.PrivateKey, not %T", key)
		}
		i.method, alg = jwt.SigningMethodES256, jwkset.AlgES256
	default:
		return nil, fmt.Errorf("audittoken: issuer: unsupported key type %T; use Ed25519 or ECDSA P-256", i.public)
	}
	var err error
	if i.kid, err = thumbprint(i.public); err != nil {
		return nil, fmt.Errorf("audittoken: issuer: key id: %w", err)
	}
	// Built once: a key the JWK encoder refuses should stop start-up, not fail the JWKS route later.
	if i.jwks, err = publicJWKS(i.public, alg, i.kid); err != nil {
		return nil, fmt.Errorf("audittoken: issuer: JWKS: %w", err)
	}
	return i, nil
}

// KeyID is the "kid" of the Issuer's tokens and JWK: the RFC 7638 thumbprint of its public key.
func (i *Issuer) KeyID() string { return i.kid }

// JWKS is the JWK Set, {"keys":[...]}, of the Issuer's public key, to be served at
// /.well-known/jwks.json. It never holds private key material. The document is built by NewIssuer,
// so the error is nil for any Issuer NewIssuer returned; it stays in the signature for a key source
// that can fail, such as one that publishes several keys during a rotation.
func (i *Issuer) JWKS() ([]byte, error) { return bytes.Clone(i.jwks), nil }

// Issue signs a token for subject with scopes, valid from now for ttl, and returns it with its expiry
// (the "exp" claim, whole seconds). The caller validates its input and answers the client; Issue only
// refuses what would make a token the Verifier or the routes cannot use: an empty subject, no scope or
// an unknown one, a ttl that is not positive.
func (i *Issuer) Issue(subject string, scopes []string, ttl time.Duration, now time.Time) (token string, expires time.Time, err error) {
	if subject == "" {
		return "", time.Time{}, errors.New("audittoken: issue: empty subject")
	}
	if ttl <= 0 {
		return "", time.Time{}, fmt.Errorf("audittoken: issue: ttl %v is not positive", ttl)
	}
	if len(scopes) == 0 {
		return "", time.Time{}, errors.New("audittoken: issue: no scope")
	}
	for _, s := range scopes {
		if !slices.Contains(Scopes, s) {
			return "", time.Time{}, fmt.Errorf("audittoken: issue: unknown scope %q", s)
		}
	}
	// The canonical order and no duplicates: equal grants make equal "scope" claims.
	var granted []string
	for _, s := range Scopes {
		if slices.Contains(scopes, s) {
			granted = append(granted, s)
		}
	}
	// NumericDate truncates to whole seconds; Verify's one second of leeway makes up for the lost
	// fraction, so a token lives at least ttl.
	exp := jwt.NewNumericDate(now.Add(ttl))
	// A map rather than RegisteredClaims: golang-jwt writes a RegisteredClaims audience as an array,
	// and a single string is what most verifiers expect to see.
	claims := jwt.MapClaims{
		"iss": i.issuer,
		"aud": i.audience,
		"sub": subject,
		"iat": jwt.NewNumericDate(now),
		"nbf": jwt.NewNumericDate(now),
		"exp": exp,
		// A token id lets audit records and logs name one token without quoting it.
		"jti":   rand.Text(),
		"scope": strings.Join(granted, " "),
	}
	t := jwt.NewWithClaims(i.method, claims)
	t.Header["kid"] = i.kid
	signed, err := t.SignedString(i.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("audittoken: issue: sign: %w", err)
	}
	return signed, exp.Time, nil
}

// thumbprint is the RFC 7638 JWK thumbprint of pub: base64url(SHA-256) of the JSON object of the key's
// required members, in lexicographic order and without whitespace. The members come from jwkset's
// encoding, so the kid and the published JWK cannot disagree about x and y.
func thumbprint(pub crypto.PublicKey) (string, error) {
	jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{})
	if err != nil {
		return "", err
	}
	m := jwk.Marshal()
	var canonical []byte
	switch m.KTY {
	case jwkset.KtyOKP:
		canonical, err = json.Marshal(struct {
			CRV string `json:"crv"`
			KTY string `json:"kty"`
			X   string `json:"x"`
		}{string(m.CRV), string(m.KTY), m.X})
	case jwkset.KtyEC:
		canonical, err = json.Marshal(struct {
			CRV string `json:"crv"`
			KTY string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		}{string(m.CRV), string(m.KTY), m.X, m.Y})
	default:
		return "", fmt.Errorf("no thumbprint for key type %q", m.KTY)
	}
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// publicJWKS encodes pub alone as a JWK Set. Only the public key is handed to the encoder, so the
// document cannot hold private material whatever the encoder's options.
func publicJWKS(pub crypto.PublicKey, alg jwkset.ALG, kid string) ([]byte, error) {
	jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{ALG: alg, KID: kid, USE: jwkset.UseSig},
	})
	if err != nil {
		return nil, err
	}
	store := jwkset.NewMemoryStorage()
	if err := store.KeyWrite(context.Background(), jwk); err != nil {
		return nil, err
	}
	return store.JSONPublic(context.Background())
}
