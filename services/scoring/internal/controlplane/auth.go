package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// sessionKind starts every session token ("wss_..."), so that a leaked one is recognisable and
// cannot be mistaken for an API key.
const sessionKind = "wss"

// Credentials are a sign-in's e-mail and password, and the client address it came from ("" when
// unknown: those attempts share one throttle bucket).
type Credentials struct {
	Email, Password, ClientIP string
}

// Opened is a new session with its token, which exists only in this value.
type Opened struct {
	Session
	Token string
	// Created is true when the signup made the workspace (201), false when it logged in (200).
	Created bool
}

// Signup creates a workspace with its owner's password and opens a session. Signing up again with
// the same e-mail and the same password is a login (Created false), so that a client retrying a
// signup whose answer it lost, or a suite run twice against one database, gets a session; another
// password, or an account that has no password (made by identity-provider sign-in or by an admin),
// is ErrEmailTaken. A wrong password here is a failed attempt like a login's: the throttle counts it.
func (s *Service) Signup(ctx context.Context, c Credentials, workspaceName string) (Opened, error) {
	email, err := NormalizeEmail(c.Email)
	if err != nil {
		return Opened{}, err
	}
	if err := CheckPassword(c.Password); err != nil {
		return Opened{}, err
	}
	name := workspaceName
	if strings.TrimSpace(name) == "" {
		name = email[:strings.LastIndexByte(email, '@')]
	}
	if name, err = CheckWorkspaceName(name); err != nil {
		return Opened{}, err
	}
	attempts, err := s.reserve(ctx, email, c.ClientIP)
	if err != nil {
		return Opened{}, err
	}
	w, hash, err := s.store.WorkspaceByEmail(ctx, email)
	if errors.Is(err, fault.ErrNotFound) {
		hash, err := s.hasher.hash(ctx, c.Password)
		if err != nil {
			return Opened{}, err
		}
		w, err = s.store.CreateWorkspace(ctx, NewWorkspace{ID: uuid.NewString(), Email: email, Name: name, Plan: s.defaultPlan, PasswordHash: hash})
		if errors.Is(err, ErrEmailExists) {
			// Another signup of the same e-mail won the race: answer as if this one came second.
			return s.loginExisting(ctx, email, c.Password, attempts, ErrEmailTaken)
		}
		if err != nil {
			return Opened{}, err
		}
		if err := s.store.ClearAttempts(ctx, attempts, emailSubject(email)); err != nil {
			return Opened{}, err
		}
		o, err := s.open(ctx, w)
		o.Created = true
		return o, err
	}
	if err != nil {
		return Opened{}, err
	}
	return s.check(ctx, w, hash, c.Password, attempts, ErrEmailTaken)
}

// Login opens a session. A wrong password, an unknown e-mail and an account without a password are
// the same ErrBadCredentials, in about the same time: an unknown e-mail verifies against a dummy hash.
func (s *Service) Login(ctx context.Context, c Credentials) (Opened, error) {
	email, err := NormalizeEmail(c.Email)
	if err != nil {
		return Opened{}, err
	}
	attempts, err := s.reserve(ctx, email, c.ClientIP)
	if err != nil {
		return Opened{}, err
	}
	return s.loginExisting(ctx, email, c.Password, attempts, ErrBadCredentials)
}

func (s *Service) loginExisting(ctx context.Context, email, password string, attempts []int64, wrong error) (Opened, error) {
	w, hash, err := s.store.WorkspaceByEmail(ctx, email)
	if errors.Is(err, fault.ErrNotFound) {
		_, _, _ = s.hasher.verify(ctx, password, "")
		return Opened{}, wrong
	}
	if err != nil {
		return Opened{}, err
	}
	return s.check(ctx, w, hash, password, attempts, wrong)
}

// check verifies password against the workspace's hash and opens a session when it matches; a
// mismatch leaves the reserved attempts counted as failures and returns wrong.
func (s *Service) check(ctx context.Context, w Workspace, hash, password string, attempts []int64, wrong error) (Opened, error) {
	match, stale, err := s.hasher.verify(ctx, password, hash)
	if err != nil {
		return Opened{}, err
	}
	if !match {
		return Opened{}, wrong
	}
	if err := s.store.ClearAttempts(ctx, attempts, emailSubject(w.Email)); err != nil {
		return Opened{}, err
	}
	if stale {
		// The hash was made with older parameters: the password is at hand, so store a current one.
		if fresh, err := s.hasher.hash(ctx, password); err == nil {
			_ = s.store.SetPasswordHash(ctx, w.ID, fresh)
		}
	}
	return s.open(ctx, w)
}

func emailSubject(email string) string { return "email:" + email }

// reserve counts this sign-in against its e-mail and client address, or refuses it.
func (s *Service) reserve(ctx context.Context, email, clientIP string) ([]int64, error) {
	if clientIP == "" {
		clientIP = "unknown"
	}
	ids, retry, err := s.store.ReserveAttempts(ctx, []Attempt{
		{Subject: emailSubject(email), Limit: s.emailLimit},
		{Subject: "ip:" + clientIP, Limit: s.ipLimit},
	}, s.window)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		return nil, &ThrottledError{RetryAfter: max(retry, time.Second)}
	}
	return ids, nil
}

// open starts a session for w.
func (s *Service) open(ctx context.Context, w Workspace) (Opened, error) {
	secret, err := auth.NewAPIKey(sessionKind)
	if err != nil {
		return Opened{}, err
	}
	now := s.now()
	sess := Session{ID: uuid.NewString(), Workspace: w, LastUsedAt: now, ExpiresAt: now.Add(s.lifetime).Truncate(time.Second)}
	if err := s.store.CreateSession(ctx, NewSession{ID: sess.ID, AccountID: w.ID, Hash: secret.Hash, CreatedAt: now, ExpiresAt: sess.ExpiresAt}); err != nil {
		return Opened{}, err
	}
	return Opened{Session: sess, Token: secret.Secret}, nil
}

// Authenticate returns the open session of token, sliding its idle timeout. Sessions are read from
// PostgreSQL on every call (no cache): the dashboard's traffic is small, and a logout or expiry
// then holds on every replica at once.
func (s *Service) Authenticate(ctx context.Context, token string) (Session, error) {
	if !strings.HasPrefix(token, sessionKind+"_") {
		return Session{}, ErrUnauthenticated
	}
	sess, err := s.store.SessionByHash(ctx, auth.HashAPIKey(token))
	if errors.Is(err, fault.ErrNotFound) {
		return Session{}, ErrUnauthenticated
	}
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	if !now.Before(sess.ExpiresAt) || !now.Before(sess.LastUsedAt.Add(s.idle)) {
		if err := s.store.DeleteSession(ctx, sess.ID); err != nil {
			return Session{}, err
		}
		return Session{}, ErrUnauthenticated
	}
	if now.Sub(sess.LastUsedAt) >= touchEvery {
		if err := s.store.TouchSession(ctx, sess.ID, now); err != nil {
			return Session{}, fmt.Errorf("touch session: %w", err)
		}
	}
	return sess, nil
}

// Logout ends a session.
func (s *Service) Logout(ctx context.Context, sess Session) error {
	return s.store.DeleteSession(ctx, sess.ID)
}

// Rename renames the session's workspace.
func (s *Service) Rename(ctx context.Context, sess Session, name string) (Workspace, error) {
	name, err := CheckWorkspaceName(name)
	if err != nil {
		return Workspace{}, err
	}
	return s.store.RenameWorkspace(ctx, sess.Workspace.ID, name)
}
