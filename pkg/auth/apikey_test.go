package auth

import (
	"strings"
	"testing"
)

func TestNewAPIKey(t *testing.T) {
	t.Parallel()
	a, err := NewAPIKey("vk")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAPIKey("vk")
	if a.Secret == b.Secret || a.Hash == b.Hash {
		t.Fatal("two keys are equal")
	}
	if !strings.HasPrefix(a.Secret, "vk_") || len(a.Secret) != 3+43 || !strings.HasPrefix(a.Secret, a.Prefix) || len(a.Prefix) != 11 {
		t.Errorf("key %q prefix %q", a.Secret, a.Prefix)
	}
	if a.Hash != HashAPIKey(a.Secret) || len(a.Hash) != 64 || strings.Contains(a.Hash, a.Secret) {
		t.Errorf("hash %q", a.Hash)
	}
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Bearer vk_abc": "vk_abc", "bearer  vk_abc ": "vk_abc", "Basic dXNlcg==": "", "vk_abc": "", "": "", "Bearer": "",
	} {
		if got := BearerToken(in); got != want {
			t.Errorf("BearerToken(%q): got %q, want %q", in, got, want)
		}
	}
}
