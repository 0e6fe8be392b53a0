package controlplane

import (
	"errors"
	"net/mail"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string // want "" means refused
	}{
		{"acceptance@example.com", "acceptance@example.com"},
		{"  Ann.Lee+dash@Example.COM ", "ann.lee+dash@example.com"},
		{"a@b.co", "a@b.co"},
		{"", ""},
		{"ann", ""},
		{"ann@", ""},
		{"@example.com", ""},
		{"ann@localhost", ""},           // no dot in the domain
		{"ann@example.com.", ""},        // trailing dot
		{"ann@[127.0.0.1]", ""},         // address literal
		{"Ann <ann@example.com>", ""},   // display name
		{"ann@example.com, b@x.io", ""}, // a list
		{`"ann lee"@example.com`, ""},   // quoted local part
		{"ann@exa mple.com", ""},        // space
		{strings.Repeat("a", 250) + "@example.com", ""},
	} {
		got, err := NormalizeEmail(tt.in)
		if tt.want == "" {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("NormalizeEmail(%q): got %q, %v; want fault.ErrInvalid", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeEmail(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"correct horse battery staple", true},
		{"fifteen chars!!", true},
		{"fourteen chars", false},
		{"ünïcödé pässwörd", true}, // 16 characters, more bytes: length counts characters
		{"ab" + strings.Repeat("é", 12), false},
		{strings.Repeat("a", 15), false}, // one character repeated
		{strings.Repeat("ab", 128), true},
		{strings.Repeat("ab", 128) + "c", false}, // 257 characters
		{"correct horse\x00battery staple", false},
		{"correct horse\nbattery staple", false},
		{"correct horse \xff battery staple", false},
		{"", false},
	} {
		err := CheckPassword(tt.in)
		if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrWeakPassword) {
			t.Errorf("CheckPassword(%q): got %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

func TestCheckWorkspaceName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string
	}{
		{"  Acme Billing ", "Acme Billing"},
		{"Zürich Klinik", "Zürich Klinik"},
		{"", ""},
		{"   ", ""},
		{"tab\there", ""},
		{strings.Repeat("x", 101), ""},
	} {
		got, err := CheckWorkspaceName(tt.in)
		if tt.want == "" != (err != nil) || got != tt.want {
			t.Errorf("CheckWorkspaceName(%q): got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzNormalizeEmail checks the properties accounts rely on: an accepted address is lower case, at
// most 254 bytes, a bare address net/mail reads back unchanged, and normalising it again is a no-op.
func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"acceptance@example.com", "A@B.CO", "Ann <a@b.co>", `"x y"@b.co`, "a@b", "a@@b.co", "a@b.co\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeEmail(s)
		if err != nil {
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("NormalizeEmail(%q): error %v is not fault.ErrInvalid", s, err)
			}
			return
		}
		if got != strings.ToLower(got) || len(got) > 254 {
			t.Fatalf("NormalizeEmail(%q) = %q: not lower case or too long", s, got)
		}
		addr, err := mail.ParseAddress(got)
		if err != nil || addr.Name != "" || !strings.EqualFold(addr.Address, got) {
			t.Fatalf("NormalizeEmail(%q) = %q: net/mail reads %v, %v", s, got, addr, err)
		}
		if again, err := NormalizeEmail(got); err != nil || again != got {
			t.Fatalf("NormalizeEmail(%q) = %q, then %q, %v", s, got, again, err)
		}
	})
}

// FuzzCheckPassword checks that an accepted password is valid UTF-8 of 15..256 characters.
func FuzzCheckPassword(f *testing.F) {
	for _, s := range []string{"correct horse battery staple", "short", strings.Repeat("a", 15), "ünïcödé pässwörd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckPassword(s) != nil {
			return
		}
		if n := utf8.RuneCountInString(s); !utf8.ValidString(s) || n < MinPasswordRunes || n > MaxPasswordRunes {
			t.Fatalf("CheckPassword accepted %q (%d characters)", s, n)
		}
	})
}
