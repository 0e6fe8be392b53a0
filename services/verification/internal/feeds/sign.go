package feeds

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// URLLifetime is how long a download URL works.
const URLLifetime = 15 * time.Minute

// FilePath is where the service serves artifact contents; the signature is the only credential.
const FilePath = "/v1/intelligence/data/files/"

// Signer signs and checks download URLs with a key every replica shares.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a signer. The key is derived from a service secret, so that every replica
// accepts the URLs any of them signed without one more setting to distribute.
func NewSigner(secret string) *Signer {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("data-feed download URLs v1"))
	return &Signer{key: m.Sum(nil), now: time.Now}
}

func (s *Signer) mac(id uuid.UUID, expires int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id.String() + "." + strconv.FormatInt(expires, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// Sign returns the path and query of a download URL of the artifact, and when it expires.
func (s *Signer) Sign(id uuid.UUID) (string, time.Time) {
	exp := s.now().Add(URLLifetime).Truncate(time.Second)
	q := url.Values{"expires": {strconv.FormatInt(exp.Unix(), 10)}, "signature": {s.mac(id, exp.Unix())}}
	return FilePath + id.String() + "?" + q.Encode(), exp
}

// Verify checks a download URL's query for the artifact.
func (s *Signer) Verify(id uuid.UUID, q url.Values) error {
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || s.now().Unix() > exp {
		return fault.ErrBadSignature
	}
	got, err := hex.DecodeString(q.Get("signature"))
	want, _ := hex.DecodeString(s.mac(id, exp))
	if err != nil || !hmac.Equal(got, want) {
		return fault.ErrBadSignature
	}
	return nil
}
