package surface

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) form of a JSON document: object members sorted by their
// UTF-16 code units, no insignificant whitespace, numbers and strings serialised as ECMAScript does.
//
// The work is delegated to github.com/gowebpki/jcs, a maintained port of the RFC's reference code
// that is hardened against deep nesting and quadratic inputs; a hand-rolled decode-and-re-encode
// through encoding/json would sort keys by UTF-8 bytes and keep numbers in their sent spelling,
// so two servers sending 1.0 and 1 would hash differently. JCS rejects what I-JSON forbids
// (duplicate member names, invalid UTF-8, numbers beyond float64): callers get that error.
func Canonical(raw []byte) ([]byte, error) {
	return jcs.Transform(raw)
}

// absent reports whether a listed JSON value counts as not given: servers send both no member and
// an explicit null for "no schema", and those must hash the same.
func absent(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// jsonHash is the SHA-256 hex of raw's canonical form, or "" when raw is absent.
//
// A value JCS refuses (duplicate keys, say) is hashed as sent, prefixed so it can never equal
// the hash of a canonical document: it still yields a stable hash for the same bytes, only one
// that key reordering would change.
func jsonHash(raw []byte) string {
	if absent(raw) {
		return ""
	}
	c, err := Canonical(raw)
	if err != nil {
		return sum([]byte("noncanonical\x00"), bytes.TrimSpace(raw))
	}
	return sum(c)
}

// textHash is the SHA-256 hex of a description, or "" when it is empty.
//
// Only trailing ASCII whitespace is dropped: servers built from templates and heredocs add and lose
// trailing newlines between releases without meaning anything. Nothing else is normalised, not
// even Unicode NFC: the model reads the bytes the server sends, so a switch between composed and
// decomposed forms, or an inserted zero-width character, is a change to what the model sees and
// must change the hash.
func textHash(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if s == "" {
		return ""
	}
	return sum([]byte(s))
}

func sum(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
