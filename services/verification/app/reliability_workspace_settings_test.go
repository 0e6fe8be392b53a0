package app

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/config"
)

func TestReliabilityWorkspaceSettings(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}))
	file := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(file, []byte(pkcs8), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := map[string]string{
		"VERIFICATION_CODE_HOST_API_URL":     "https://api.github.com",
		"VERIFICATION_CODE_HOST_APP_ID":      "12345",
		"VERIFICATION_CODE_HOST_PRIVATE_KEY": pkcs1,
	}
	with := func(changes map[string]string) map[string]string {
		env := map[string]string{}
		for k, v := range ok {
			env[k] = v
		}
		for k, v := range changes {
			if v == "-" {
				delete(env, k)
			} else {
				env[k] = v
			}
		}
		return env
	}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		bad     string // the variable the error names; "" = valid
		enabled bool
	}{
		{"nothing set", map[string]string{}, "", false},
		{"all set", ok, "", true},
		{"PKCS#8 with escaped newlines", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": strings.ReplaceAll(pkcs8, "\n", `\n`)}), "", true},
		{"key file", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": "-", "VERIFICATION_CODE_HOST_PRIVATE_KEY_FILE": file}), "", true},
		{"loopback http", with(map[string]string{"VERIFICATION_CODE_HOST_API_URL": "http://127.0.0.1:9999"}), "", true},
		{"public http", with(map[string]string{"VERIFICATION_CODE_HOST_API_URL": "http://api.github.com"}), "VERIFICATION_CODE_HOST_API_URL", false},
		{"URL with credentials", with(map[string]string{"VERIFICATION_CODE_HOST_API_URL": "https://u:p@api.github.com"}), "VERIFICATION_CODE_HOST_API_URL", false},
		{"no key", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": "-"}), "VERIFICATION_CODE_HOST_API_URL", false},
		{"no URL", with(map[string]string{"VERIFICATION_CODE_HOST_API_URL": "-"}), "VERIFICATION_CODE_HOST_API_URL", false},
		{"app id not a number", with(map[string]string{"VERIFICATION_CODE_HOST_APP_ID": "my-app"}), "VERIFICATION_CODE_HOST_APP_ID", false},
		{"not PEM", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": "secret"}), "VERIFICATION_CODE_HOST_PRIVATE_KEY", false},
		{"short key", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": smallPEM}), "VERIFICATION_CODE_HOST_PRIVATE_KEY", false},
		{"key and file", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY_FILE": file}), "VERIFICATION_CODE_HOST_PRIVATE_KEY_FILE", false},
		{"missing file", with(map[string]string{"VERIFICATION_CODE_HOST_PRIVATE_KEY": "-", "VERIFICATION_CODE_HOST_PRIVATE_KEY_FILE": file + ".nope"}), "VERIFICATION_CODE_HOST_PRIVATE_KEY_FILE", false},
		{"timeout", map[string]string{"VERIFICATION_CODE_HOST_TIMEOUT": "0s"}, "VERIFICATION_CODE_HOST_TIMEOUT", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var s ReliabilitySettings
			err := config.Load(func(k string) string { return tt.env[k] }, "VERIFICATION_", &s)
			switch {
			case tt.bad == "" && err != nil:
				t.Fatalf("got %v, want valid", err)
			case tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)):
				t.Fatalf("got %v, want an error naming %s", err, tt.bad)
			case tt.bad == "" && (s.codeHostKey != nil) != tt.enabled:
				t.Fatalf("code host enabled: got %v, want %v", s.codeHostKey != nil, tt.enabled)
			}
			if err != nil && strings.Contains(err.Error(), "PRIVATE KEY-----") {
				t.Errorf("the error quotes the key: %v", err)
			}
		})
	}
}
