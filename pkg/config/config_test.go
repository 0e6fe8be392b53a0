package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadServiceReportsEveryProblemByVariable(t *testing.T) {
	t.Parallel()
	valid := map[string]string{
		"SVC_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/svc",
		"SVC_ADMIN_TOKEN":  "0123456789abcdef",
	}
	tests := []struct {
		name      string
		set       map[string]string
		wantLines []string // each must appear, one per line; nil means no error
	}{
		{"defaults and required values", nil, nil},
		{"required values missing", map[string]string{"SVC_DATABASE_URL": "", "SVC_ADMIN_TOKEN": ""},
			[]string{"SVC_DATABASE_URL: required, not set", "SVC_ADMIN_TOKEN: required, not set"}},
		{"bad listen address", map[string]string{"SVC_HTTP_ADDR": "8080"}, []string{"SVC_HTTP_ADDR: not a host:port"}},
		{"bad duration", map[string]string{"SVC_SHUTDOWN_TIMEOUT": "soon"}, []string{"SVC_SHUTDOWN_TIMEOUT: not a valid duration"}},
		{"negative duration", map[string]string{"SVC_SHUTDOWN_TIMEOUT": "-1s"}, []string{"SVC_SHUTDOWN_TIMEOUT: must be positive"}},
		{"HTTP limits", map[string]string{"SVC_MAX_BODY_BYTES": "10", "SVC_HTTP_READ_TIMEOUT": "-1s", "SVC_MAX_CONNECTIONS": "0"},
			[]string{"SVC_MAX_BODY_BYTES: must be at least 1024", "SVC_HTTP_READ_TIMEOUT: must be positive", "SVC_MAX_CONNECTIONS: must be positive"}},
		{"bad log level", map[string]string{"SVC_LOG_LEVEL": "loud"}, []string{"SVC_LOG_LEVEL: want debug, info, warn or error"}},
		{"short admin token", map[string]string{"SVC_ADMIN_TOKEN": "short"}, []string{"SVC_ADMIN_TOKEN: too short"}},
		{"database URL of another kind", map[string]string{"SVC_DATABASE_URL": "mysql://db/x"}, []string{`SVC_DATABASE_URL: scheme "mysql" not supported`}},
		{"several at once", map[string]string{"SVC_HTTP_ADDR": "x", "SVC_GRPC_ADDR": "y", "SVC_ADMIN_TOKEN": ""},
			[]string{"SVC_HTTP_ADDR:", "SVC_GRPC_ADDR:", "SVC_ADMIN_TOKEN: required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{}
			for k, v := range valid {
				vars[k] = v
			}
			for k, v := range tt.set {
				vars[k] = v
			}
			cfg := config.Service{HTTPAddr: ":8080", GRPCAddr: ":9090"}
			err := config.Load(env(vars), "SVC_", &cfg)
			if tt.wantLines == nil {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				if cfg.ShutdownTimeout != 20*time.Second || cfg.LogLevel != "info" || cfg.HTTPAddr != ":8080" {
					t.Errorf("defaults: got %+v", cfg)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %v", tt.wantLines)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.wantLines) {
				t.Errorf("got %d lines %q, want %d", len(lines), lines, len(tt.wantLines))
			}
			for _, want := range tt.wantLines {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, want)
				}
				if !found {
					t.Errorf("no line starts with %q in %q", want, lines)
				}
			}
		})
	}
}

func TestLoadNATS(t *testing.T) {
	t.Parallel()
	var n config.NATS
	if err := config.Load(env(nil), "", &n); err != nil || n.URL != "nats://127.0.0.1:4222" {
		t.Fatalf("defaults: got %+v %v", n, err)
	}
	err := config.Load(env(map[string]string{"NATS_URL": "http://x:1", "NATS_NAMESPACE": "a.b"}), "", &n)
	if err == nil || !strings.Contains(err.Error(), "NATS_URL:") || !strings.Contains(err.Error(), "NATS_NAMESPACE:") {
		t.Fatalf("got %v, want errors naming NATS_URL and NATS_NAMESPACE", err)
	}
}

func TestVarsNamesEveryVariable(t *testing.T) {
	t.Parallel()
	got, err := config.Vars("SVC_", &config.Service{})
	if err != nil {
		t.Fatal(err)
	}
	want := "SVC_HTTP_ADDR SVC_GRPC_ADDR SVC_DATABASE_URL SVC_ADMIN_TOKEN SVC_LOG_LEVEL SVC_SHUTDOWN_TIMEOUT" +
		" SVC_MAX_BODY_BYTES SVC_HTTP_READ_HEADER_TIMEOUT SVC_HTTP_READ_TIMEOUT SVC_HTTP_WRITE_TIMEOUT SVC_HTTP_IDLE_TIMEOUT SVC_MAX_CONNECTIONS"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}
