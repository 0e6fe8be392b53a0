package config

import (
	"errors"
	"log/slog"
	"strings"
	"time"
)

// MinAdminTokenLength is the shortest admin token accepted: shorter ones are guessable.
const MinAdminTokenLength = 16

// Service holds the settings every service shares. Each service loads it behind its own variable prefix,
// so the names read SCORING_HTTP_ADDR, SCORING_DATABASE_URL and so on.
type Service struct {
	HTTPAddr        string        `env:"HTTP_ADDR"`
	GRPCAddr        string        `env:"GRPC_ADDR"`
	DatabaseURL     string        `env:"DATABASE_URL,required"`
	AdminToken      string        `env:"ADMIN_TOKEN,required"`
	LogLevel        string        `env:"LOG_LEVEL" envDefault:"info"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// MaxBodyBytes caps a request body on the HTTP listener (routes that need more have their own cap);
	// a larger body is answered 413.
	MaxBodyBytes int64 `env:"MAX_BODY_BYTES" envDefault:"1048576"`
	// The HTTP server's timeouts: reading the headers, reading the whole request with its body,
	// writing the answer, and a kept-alive connection's idle time.
	HTTPReadHeaderTimeout time.Duration `env:"HTTP_READ_HEADER_TIMEOUT" envDefault:"10s"`
	HTTPReadTimeout       time.Duration `env:"HTTP_READ_TIMEOUT" envDefault:"30s"`
	HTTPWriteTimeout      time.Duration `env:"HTTP_WRITE_TIMEOUT" envDefault:"60s"`
	HTTPIdleTimeout       time.Duration `env:"HTTP_IDLE_TIMEOUT" envDefault:"120s"`
	// MaxConnections bounds the HTTP connections open at once; further clients wait to be accepted.
	MaxConnections int `env:"MAX_CONNECTIONS" envDefault:"4096"`
}

// NATS holds the message-bus settings every service shares; the variable names carry no service prefix
// because all services must agree on them.
type NATS struct {
	URL string `env:"NATS_URL" envDefault:"nats://127.0.0.1:4222"`
	// Namespace prefixes every stream name and subject, so that several stacks (or test runs) can share
	// one NATS server without seeing each other's events. Empty in an ordinary deployment.
	Namespace string `env:"NATS_NAMESPACE"`
}

// Validate checks the shared settings; prefix is the service's variable prefix, e.g. "SCORING_".
func (s Service) Validate(prefix string) error {
	var errs []error
	if err := CheckAddr(prefix+"HTTP_ADDR", s.HTTPAddr); err != nil {
		errs = append(errs, err)
	}
	if err := CheckAddr(prefix+"GRPC_ADDR", s.GRPCAddr); err != nil {
		errs = append(errs, err)
	}
	if s.DatabaseURL != "" {
		if err := CheckURL(prefix+"DATABASE_URL", s.DatabaseURL, "postgres", "postgresql"); err != nil {
			errs = append(errs, err)
		}
	}
	if s.AdminToken != "" && len(s.AdminToken) < MinAdminTokenLength {
		errs = append(errs, Invalid(prefix+"ADMIN_TOKEN", "too short: use at least %d characters", MinAdminTokenLength))
	}
	if _, err := ParseLevel(s.LogLevel); err != nil {
		errs = append(errs, Invalid(prefix+"LOG_LEVEL", "%v", err))
	}
	if s.ShutdownTimeout <= 0 {
		errs = append(errs, Invalid(prefix+"SHUTDOWN_TIMEOUT", "must be positive"))
	}
	if s.MaxBodyBytes < 1024 {
		errs = append(errs, Invalid(prefix+"MAX_BODY_BYTES", "must be at least 1024"))
	}
	for name, d := range map[string]time.Duration{"HTTP_READ_HEADER_TIMEOUT": s.HTTPReadHeaderTimeout,
		"HTTP_READ_TIMEOUT": s.HTTPReadTimeout, "HTTP_WRITE_TIMEOUT": s.HTTPWriteTimeout, "HTTP_IDLE_TIMEOUT": s.HTTPIdleTimeout} {
		if d <= 0 {
			errs = append(errs, Invalid(prefix+name, "must be positive"))
		}
	}
	if s.MaxConnections < 1 {
		errs = append(errs, Invalid(prefix+"MAX_CONNECTIONS", "must be positive"))
	}
	return errors.Join(errs...)
}

// Validate checks the bus settings; their names carry no prefix.
func (n NATS) Validate(string) error {
	var errs []error
	if err := CheckURL("NATS_URL", n.URL, "nats", "tls"); err != nil {
		errs = append(errs, err)
	}
	for _, r := range n.Namespace {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			errs = append(errs, Invalid("NATS_NAMESPACE", "only letters, digits, '_' and '-' are allowed"))
			break
		}
	}
	return errors.Join(errs...)
}

// ParseLevel reads a log level: debug, info, warn or error.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return l, l.UnmarshalText([]byte(s))
	}
	return l, errors.New(`want debug, info, warn or error`)
}
