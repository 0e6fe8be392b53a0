// Package controlplane is the self-serve key dashboard of interface release v1.4.0: workspace owners
// sign up and log in with an e-mail and a password (argon2id), hold a workspace session, rename their
// workspace and manage its API keys, and may hand a new key over through a one-time setup link.
//
// A workspace is an account (the keys package's) with an e-mail; its keys are ordinary API keys of
// that account, so they score and meter on the account's plan like any other key.
package controlplane

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// Errors of the use cases. A wrapped error's text after the sentinel is written for the caller.
var (
	// ErrWeakPassword is a password a new account may not have.
	ErrWeakPassword = errors.New("weak password")
	// ErrBadCredentials is a wrong password, an unknown e-mail, or an account without a password:
	// the caller cannot tell which.
	ErrBadCredentials = errors.New("invalid email or password")
	// ErrEmailTaken is a signup for an e-mail that has an account whose password is another one (or
	// that has no password yet).
	ErrEmailTaken = errors.New("an account with this email already exists")
	// ErrUnauthenticated is a session token that is missing, unknown, expired or logged out.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrGone is a setup link that was used, has expired, or whose key was revoked.
	ErrGone = errors.New("gone")
	// ErrEmailExists is what Store.CreateWorkspace returns when another request created the account
	// first.
	ErrEmailExists = errors.New("email exists")
)

// ThrottledError is a sign-in refused because its e-mail or client address failed too often.
type ThrottledError struct {
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string { return "too many failed sign-in attempts" }

// Workspace is an account seen from the control plane.
type Workspace struct {
	ID        string
	Email     string
	Name      string
	Plan      string
	CreatedAt time.Time
}

// Session is an open workspace session.
type Session struct {
	ID         string
	Workspace  Workspace
	LastUsedAt time.Time
	ExpiresAt  time.Time
}

// NewSession is what Store.CreateSession stores.
type NewSession struct {
	ID, AccountID, Hash  string
	CreatedAt, ExpiresAt time.Time
}

// NewWorkspace is what Store.CreateWorkspace stores: a new account on Plan with Email.
type NewWorkspace struct {
	ID, Email, Name, Plan, PasswordHash string
}

// SetupLink is a stored setup link.
type SetupLink struct {
	KeyID      string
	AccountID  string
	Sealed     []byte
	ExpiresAt  time.Time
	RevealedAt *time.Time
	// KeyRevoked is true when the link's key was revoked.
	KeyRevoked bool
}

// NewSetupLink is what Store.CreateSetupLink stores.
type NewSetupLink struct {
	Hash, KeyID, AccountID string
	Sealed                 []byte
	ExpiresAt              time.Time
}

// Attempt is a subject of the sign-in throttle and how many attempts it may have in a window.
type Attempt struct {
	Subject string
	Limit   int
}

// Store persists workspaces, sessions, the sign-in throttle and setup links. Methods that look up
// one row return fault.ErrNotFound when there is none.
type Store interface {
	// WorkspaceByEmail returns the account of email and its password hash ("" when it has none).
	WorkspaceByEmail(ctx context.Context, email string) (Workspace, string, error)
	// CreateWorkspace creates an account; ErrEmailExists when the e-mail has one.
	CreateWorkspace(ctx context.Context, w NewWorkspace) (Workspace, error)
	// EnsureWorkspace returns the account of email, creating it (without a password) when needed.
	EnsureWorkspace(ctx context.Context, w NewWorkspace) (Workspace, error)
	SetPasswordHash(ctx context.Context, accountID, hash string) error
	RenameWorkspace(ctx context.Context, accountID, name string) (Workspace, error)

	CreateSession(ctx context.Context, s NewSession) error
	SessionByHash(ctx context.Context, hash string) (Session, error)
	TouchSession(ctx context.Context, id string, at time.Time) error
	DeleteSession(ctx context.Context, id string) error

	// ReserveAttempts records one sign-in attempt against every subject, unless a subject already
	// has Limit attempts within window: then it records nothing and returns how long until the
	// oldest of them leaves the window. Concurrent reservations of a subject are serialised, so
	// parallel guesses cannot overshoot the limit.
	ReserveAttempts(ctx context.Context, subjects []Attempt, window time.Duration) (ids []int64, retryAfter time.Duration, err error)
	// ClearAttempts deletes the attempts ids and every attempt of subject (a successful sign-in
	// forgives its e-mail's earlier failures).
	ClearAttempts(ctx context.Context, ids []int64, subject string) error

	CreateSetupLink(ctx context.Context, l NewSetupLink) error
	SetupLinkByHash(ctx context.Context, hash string) (SetupLink, error)
	// ConsumeSetupLink marks a pending, unexpired link of a live key revealed and returns its sealed
	// secret; fault.ErrNotFound when the link is not in that state (the caller looks again to say why).
	ConsumeSetupLink(ctx context.Context, hash string, now time.Time) (SetupLink, error)
	// PendingSetupKeys returns the ids of the account's keys whose setup link is pending at now.
	PendingSetupKeys(ctx context.Context, accountID string, now time.Time) (map[string]bool, error)
}

// KeyIssuer is the keys package's workspace key lifecycle (keys.WorkspaceKeys).
type KeyIssuer interface {
	IssueForAccount(ctx context.Context, accountID, name string) (keys.Issued, error)
	AccountKeys(ctx context.Context, accountID string) ([]keys.Key, error)
	RevokeForAccount(ctx context.Context, accountID, keyID string) error
	AgentKey(ctx context.Context, accountID string) (keys.Key, error)
}

// Session and throttle defaults.
const (
	// DefaultSessionIdle ends a session unused for this long.
	DefaultSessionIdle = 24 * time.Hour
	// DefaultSessionLifetime ends every session this long after login, used or not.
	DefaultSessionLifetime = 7 * 24 * time.Hour
	// DefaultSetupLinkTTL is how long a setup link can be used.
	DefaultSetupLinkTTL = 24 * time.Hour
	// DefaultThrottleWindow, DefaultEmailLimit and DefaultIPLimit: at most 5 failed sign-ins per
	// e-mail and 20 per client address in any 15 minutes (OWASP Authentication Cheat Sheet's
	// account lockout; the address limit is higher because offices share one address).
	DefaultThrottleWindow = 15 * time.Minute
	DefaultEmailLimit     = 5
	DefaultIPLimit        = 20
	// MaxActiveKeys bounds a workspace's live keys: trial quotas are per key.
	MaxActiveKeys = 25
	// touchEvery is how stale last_used_at may get before a request writes it: a dashboard's burst
	// of calls writes once, and the idle timeout is a day.
	touchEvery = time.Minute
)

// Service runs the control plane's use cases.
type Service struct {
	store       Store
	keys        KeyIssuer
	hasher      *hasher
	publicURL   string
	now         func() time.Time
	idle        time.Duration
	lifetime    time.Duration
	linkTTL     time.Duration
	window      time.Duration
	emailLimit  int
	ipLimit     int
	defaultPlan string
	hashParams  HashParams
}

// Option configures New.
type Option func(*Service)

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithHashParams replaces DefaultHashParams (tests use cheap ones).
func WithHashParams(p HashParams) Option { return func(s *Service) { s.hashParams = p } }

// WithThrottle replaces the sign-in throttle's window and limits.
func WithThrottle(window time.Duration, emailLimit, ipLimit int) Option {
	return func(s *Service) { s.window, s.emailLimit, s.ipLimit = window, emailLimit, ipLimit }
}

// WithSessionLifetime replaces the idle timeout and absolute lifetime of sessions.
func WithSessionLifetime(idle, lifetime time.Duration) Option {
	return func(s *Service) { s.idle, s.lifetime = idle, lifetime }
}

// New returns a Service. publicURL is the service's external base URL, under which setup links
// point.
func New(store Store, issuer KeyIssuer, publicURL string, opts ...Option) *Service {
	s := &Service{
		store: store, keys: issuer, publicURL: strings.TrimRight(publicURL, "/"), now: time.Now,
		idle: DefaultSessionIdle, lifetime: DefaultSessionLifetime, linkTTL: DefaultSetupLinkTTL,
		window: DefaultThrottleWindow, emailLimit: DefaultEmailLimit, ipLimit: DefaultIPLimit,
		defaultPlan: "trial", hashParams: DefaultHashParams,
	}
	for _, o := range opts {
		o(s)
	}
	s.hasher = newHasher(s.hashParams)
	return s
}

// IdleTimeout is how long an unused session stays open.
func (s *Service) IdleTimeout() time.Duration { return s.idle }
