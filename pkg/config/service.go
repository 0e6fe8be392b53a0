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
