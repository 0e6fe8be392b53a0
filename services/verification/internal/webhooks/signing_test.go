package webhooks

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// TestSignedHeadersVector checks the signature against the example of the Standard Webhooks
// specification (the vector its reference libraries test).
func TestSignedHeadersVector(t *testing.T) {
	h, err := SignedHeaders("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"webhook-id":        "msg_p5jXN8AQM9LWM0D4loKWxJek",
		"webhook-timestamp": "1614265330",
		"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestNewSecret(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	if !strings.HasPrefix(a, "whsec_") || err != nil || len(raw) != 32 {
		t.Fatalf("secret %q: want whsec_ + base64 of 32 bytes", a)
	}
	if a == b {
		t.Fatal("two secrets are equal")
	}
	if _, err := SignedHeaders(a, "id", time.Now(), nil); err != nil {
		t.Fatalf("a new secret does not sign: %v", err)
	}
}
