package oauth

import (
	"maps"
	"time"

	"github.com/ory/fosite"
)

// Session is what a grant carries from the authorize request to its tokens: the signed-in user and
// the workspace key that the tokens act as (so that calls with them are limited and metered as that
// key), and fosite's expiry times. It is stored as JSON with every code and token.
type Session struct {
	ExpiresAt map[fosite.TokenType]time.Time `json:"expires_at"`
	// Subject is the user's verified e-mail at the identity provider.
	Subject string `json:"subject"`
	// KeyID is the id of the workspace's agent key (control plane AgentKey).
	KeyID string `json:"key_id"`
}

var _ fosite.Session = (*Session)(nil)

// SetExpiresAt sets the expiry of one token type.
func (s *Session) SetExpiresAt(key fosite.TokenType, exp time.Time) {
	if s.ExpiresAt == nil {
		s.ExpiresAt = map[fosite.TokenType]time.Time{}
	}
	s.ExpiresAt[key] = exp
}

// GetExpiresAt returns the expiry of one token type (zero when unset).
func (s *Session) GetExpiresAt(key fosite.TokenType) time.Time { return s.ExpiresAt[key] }

// GetUsername returns the subject.
func (s *Session) GetUsername() string { return s.Subject }

// GetSubject returns the subject.
func (s *Session) GetSubject() string { return s.Subject }

// Clone returns a deep copy.
func (s *Session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := *s
	c.ExpiresAt = maps.Clone(s.ExpiresAt)
	return &c
}
