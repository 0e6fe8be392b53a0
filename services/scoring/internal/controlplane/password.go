package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"
)

// HashParams are argon2id's cost parameters. DefaultHashParams are OWASP's Password Storage Cheat
// Sheet minimum for argon2id (m = 19 MiB, t = 2, p = 1): 59 ms per hash at best on the build
// machine's two shared cores (BenchmarkHashDefault), and 19 MiB of memory while it runs. RFC 9106's first choice (2 GiB) or second
// choice (64 MiB, t = 3, p = 4) would let a handful of concurrent sign-ins exhaust a replica's memory;
// the sign-in throttle, not the hash cost alone, is what stops online guessing.
type HashParams struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
	SaltLen     int
	KeyLen      uint32
}

// DefaultHashParams are the parameters new hashes use.
var DefaultHashParams = HashParams{MemoryKiB: 19 * 1024, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}

// ErrMalformedHash is a stored hash that is not an argon2id PHC string this package can read.
var ErrMalformedHash = errors.New("malformed password hash")

// hasher computes argon2id hashes, at most a few at once: each holds MemoryKiB while it runs, so an
// unbounded burst of sign-ins would be an unbounded burst of memory.
type hasher struct {
	params HashParams
	slots  chan struct{}
	// dummy is a hash of a random password, verified when the e-mail is unknown so that an unknown
	// e-mail costs the same time as a wrong password.
	dummy string
}

func newHasher(p HashParams) *hasher {
	h := &hasher{params: p, slots: make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))}
	random := make([]byte, 32)
	_, _ = rand.Read(random)
	// hash fails only when its context ends or crypto/rand fails (which Go 1.24+ never reports).
	h.dummy, _ = h.hash(context.Background(), string(random))
	return h
}

func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.slots }

// hash returns password's argon2id hash as a PHC string:
// $argon2id$v=19$m=<KiB>,t=<iterations>,p=<parallelism>$<salt>$<hash>, salt and hash in unpadded
// standard base64 (the format of the reference implementation and of libsodium).
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	p := h.params
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, p.KeyLen)
	return encodePHC(p, salt, key), nil
}

func encodePHC(p HashParams, salt, key []byte) string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Iterations, p.Parallelism,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// verify reports whether password matches encoded, and whether encoded was made with other
// parameters than the current ones (the caller then stores a new hash). An empty encoded (an
// account without a password, or no account) verifies against the dummy hash and never matches.
func (h *hasher) verify(ctx context.Context, password, encoded string) (match, stale bool, err error) {
	target := encoded
	if target == "" {
		target = h.dummy
	}
	p, salt, want, err := decodePHC(target)
	if err != nil {
		return false, false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, false, err
	}
	defer h.release()
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, p.KeyLen)
	if encoded == "" {
		return false, false, nil
	}
	stale = p.MemoryKiB != h.params.MemoryKiB || p.Iterations != h.params.Iterations ||
		p.Parallelism != h.params.Parallelism || p.KeyLen != h.params.KeyLen
	return subtle.ConstantTimeCompare(got, want) == 1, stale, nil
}

// Bounds on what decodePHC accepts, so that a corrupted row cannot ask for gigabytes of memory or
// hours of work.
const (
	maxMemoryKiB  = 1 << 21 // 2 GiB, RFC 9106's first recommendation
	maxIterations = 64
	maxKeyLen     = 128
)

// decodePHC parses an argon2id PHC string as encodePHC writes it.
func decodePHC(s string) (HashParams, []byte, []byte, error) {
	var p HashParams
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, hash
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return p, nil, nil, ErrMalformedHash
	}
	params := strings.Split(parts[3], ",")
	if len(params) != 3 {
		return p, nil, nil, ErrMalformedHash
	}
	var vals [3]uint64
	for i, name := range []string{"m=", "t=", "p="} {
		v, ok := strings.CutPrefix(params[i], name)
		if !ok {
			return p, nil, nil, ErrMalformedHash
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return p, nil, nil, ErrMalformedHash
		}
		vals[i] = n
	}
	if vals[0] < 8 || vals[0] > maxMemoryKiB || vals[1] < 1 || vals[1] > maxIterations || vals[2] < 1 || vals[2] > 255 || vals[0] < 8*vals[2] {
		return p, nil, nil, ErrMalformedHash
	}
	b64 := base64.RawStdEncoding.Strict()
	salt, err := b64.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return p, nil, nil, ErrMalformedHash
	}
	key, err := b64.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > maxKeyLen {
		return p, nil, nil, ErrMalformedHash
	}
	p = HashParams{MemoryKiB: uint32(vals[0]), Iterations: uint32(vals[1]), Parallelism: uint8(vals[2]), SaltLen: len(salt), KeyLen: uint32(len(key))}
	return p, salt, key, nil
}
