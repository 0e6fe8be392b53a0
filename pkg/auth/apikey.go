package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// apiKeyBytes is the entropy of an issued key: 32 bytes, the 256 bits of the SHA-256 (FIPS 180-4) its
// stored hash has, so that the stored form is no easier to attack than the key.
const apiKeyBytes = 32

// IssuedKey is a new API key: the secret is shown to its owner once; only Hash and Prefix are stored.
type IssuedKey struct {
	Secret string
	Hash   string
	Prefix string
}

// NewAPIKey returns a random key whose secret starts with kind and an underscore (e.g. "vk_..."), so
// that a leaked key is recognisable by secret scanners and support staff.
func NewAPIKey(kind string) (IssuedKey, error) {
	b := make([]byte, apiKeyBytes)
	if _, err := rand.Read(b); err != nil {
		return IssuedKey{}, err
	}
	secret := kind + "_" + base64.RawURLEncoding.EncodeToString(b)
	return IssuedKey{Secret: secret, Hash: HashAPIKey(secret), Prefix: secret[:len(kind)+1+8]}, nil
}

// HashAPIKey is the stored form of a key: hex SHA-256. A fast hash is right here, unlike for passwords:
// the key has 256 bits of entropy, so there is nothing to brute-force.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// BearerToken returns the token of an "Authorization: Bearer <token>" value, or "" when there is none.
func BearerToken(authorization string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
