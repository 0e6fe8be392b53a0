package controlplane

import (
	"context"
	"strings"
	"testing"
)

// cheap are parameters that keep the tests fast; the format and the comparison are the same.
var cheap = HashParams{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

func TestHashVerifiesOnlyItsPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHasher(cheap)
	enc, err := h.hash(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q: want the PHC string of argon2id v=19 m=64,t=1,p=1", enc)
	}
	for _, tt := range []struct {
		password string
		want     bool
	}{
		{"correct horse battery staple", true},
		{"correct horse battery stapl", false},
		{"Correct horse battery staple", false},
		{"", false},
	} {
		got, stale, err := h.verify(ctx, tt.password, enc)
		if err != nil || got != tt.want || stale {
			t.Errorf("verify(%q): got %v, stale %v, %v; want %v, not stale", tt.password, got, stale, err, tt.want)
		}
	}
	again, _ := h.hash(ctx, "correct horse battery staple")
	if again == enc {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
}

func TestVerifyWithoutHashNeverMatches(t *testing.T) {
	t.Parallel()
	h := newHasher(cheap)
	// An unknown e-mail verifies against the dummy hash: even the dummy's own input cannot match.
	got, _, err := h.verify(context.Background(), "anything at all, really", "")
	if err != nil || got {
		t.Fatalf("verify against no hash: got %v, %v; want false, nil", got, err)
	}
}

func TestVerifyReportsStaleParameters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	old := newHasher(cheap)
	enc, _ := old.hash(ctx, "correct horse battery staple")
	stronger := cheap
	stronger.Iterations = 2
	match, stale, err := newHasher(stronger).verify(ctx, "correct horse battery staple", enc)
	if err != nil || !match || !stale {
		t.Fatalf("verify of an older hash: got match %v, stale %v, %v; want true, true, nil", match, stale, err)
	}
}

func TestDecodePHC(t *testing.T) {
	t.Parallel()
	const salt, key = "c29tZXNhbHRzb21lc2FsdA", "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE"
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key, true},
		{"$argon2i$v=19$m=19456,t=2,p=1$" + salt + "$" + key, false},  // another variant
		{"$argon2id$v=16$m=19456,t=2,p=1$" + salt + "$" + key, false}, // another version
		{"$argon2id$v=19$t=2,m=19456,p=1$" + salt + "$" + key, false}, // parameters out of order
		{"$argon2id$v=19$m=19456,t=2$" + salt + "$" + key, false},
		{"$argon2id$v=19$m=4194304,t=2,p=1$" + salt + "$" + key, false}, // 4 GiB: refused
		{"$argon2id$v=19$m=19456,t=0,p=1$" + salt + "$" + key, false},
		{"$argon2id$v=19$m=19456,t=2,p=0$" + salt + "$" + key, false},
		{"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "=$" + key, false}, // padded base64
		{"$argon2id$v=19$m=19456,t=2,p=1$" + salt + "$" + key[:10], false},
		{"$argon2id$v=19$m=19456,t=2,p=1$" + salt, false},
		{"", false},
	} {
		_, _, _, err := decodePHC(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("decodePHC(%q): got %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

// FuzzDecodePHC checks that the parser of stored hashes never panics and accepts only what it can
// write back unchanged, within its cost bounds.
func FuzzDecodePHC(f *testing.F) {
	f.Add("$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE")
	f.Add("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("$argon2id$v=19$m=,t=,p=$$")
	f.Add("$$$$$")
	f.Fuzz(func(t *testing.T, s string) {
		p, salt, key, err := decodePHC(s)
		if err != nil {
			return
		}
		if p.MemoryKiB > maxMemoryKiB || p.Iterations > maxIterations || len(key) > maxKeyLen {
			t.Fatalf("decodePHC(%q) accepted parameters beyond its bounds: %+v", s, p)
		}
		if got := encodePHC(p, salt, key); got != s {
			t.Fatalf("decodePHC(%q) then encodePHC: got %q", s, got)
		}
	})
}

// BenchmarkHashDefault measures one hash with DefaultHashParams (the README's figure).
func BenchmarkHashDefault(b *testing.B) {
	h := &hasher{params: DefaultHashParams, slots: make(chan struct{}, 1)}
	for b.Loop() {
		if _, err := h.hash(context.Background(), "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}
