package controlplane

import (
	"context"
	"strings"

	"github.com/google/uuid"
)

// AgentKey finds or creates the workspace owned by email and returns the id of its key for agent
// access (OAuth access tokens of identity-provider sign-in stand for it), issuing one, named
// "agent" and hidden from the workspace's key list, when it has none or it was revoked. A workspace
// made here has no password until its owner sets one, so nobody can log in to it with a password;
// signing up with its e-mail answers 409.
func (s *Service) AgentKey(ctx context.Context, email string) (string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	w, err := s.store.EnsureWorkspace(ctx, NewWorkspace{ID: uuid.NewString(), Email: email, Name: email[:strings.LastIndexByte(email, '@')], Plan: s.defaultPlan})
	if err != nil {
		return "", err
	}
	k, err := s.keys.AgentKey(ctx, w.ID)
	if err != nil {
		return "", err
	}
	return k.ID, nil
}
