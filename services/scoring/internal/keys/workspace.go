package keys

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// WorkspaceStore is what the workspace key lifecycle needs of the store beyond Store.
type WorkspaceStore interface {
	// CreateAccountKey stores a key on the existing account k.AccountID, on that account's plan, unless
	// the account already has maxActive visible live keys (ErrTooMany). A hidden key is one its
	// owner never sees; an account has at most one live hidden key (ErrAgentExists).
	CreateAccountKey(ctx context.Context, k NewKey, hidden bool, maxActive int) (Key, error)
	// AccountKeys lists the account's visible keys (not hidden, not JWT rows), newest first.
	AccountKeys(ctx context.Context, accountID string) ([]Key, error)
	// RevokeAccountKey revokes a visible key of the account and returns the hash of its secret;
	// fault.ErrNotFound when the account has no such key. Revoking a revoked key changes nothing.
	RevokeAccountKey(ctx context.Context, accountID, keyID string) (hash string, err error)
	// AgentKey returns the account's live hidden key, or fault.ErrNotFound.
	AgentKey(ctx context.Context, accountID string) (Key, error)
}

// Errors of the workspace key lifecycle.
var (
	// ErrTooMany is a key beyond the account's limit of live keys.
	ErrTooMany = errors.New("too many live keys")
	// ErrAgentExists is a second live hidden key of an account (another request made one first).
	ErrAgentExists = errors.New("agent key exists")
)

// WorkspaceKeys is the lifecycle of the keys a workspace owner manages from the control plane:
// ordinary keys of the workspace's account, so they score and meter like any key.
type WorkspaceKeys struct {
	s         *Service
	store     WorkspaceStore
	maxActive int
}

// NewWorkspaceKeys returns the lifecycle on s's cache; maxActive bounds an account's live keys.
func NewWorkspaceKeys(s *Service, store WorkspaceStore, maxActive int) *WorkspaceKeys {
	return &WorkspaceKeys{s: s, store: store, maxActive: maxActive}
}

// IssueForAccount issues a key on the account's plan.
func (w *WorkspaceKeys) IssueForAccount(ctx context.Context, accountID, name string) (Issued, error) {
	return w.issue(ctx, accountID, name, false)
}

func (w *WorkspaceKeys) issue(ctx context.Context, accountID, name string, hidden bool) (Issued, error) {
	secret, err := auth.NewAPIKey("sk")
	if err != nil {
		return Issued{}, err
	}
	k, err := w.store.CreateAccountKey(ctx, NewKey{ID: uuid.NewString(), AccountID: accountID, Kind: KindIssued,
		Name: name, Hash: secret.Hash, Prefix: secret.Prefix}, hidden, w.maxActive)
	if err != nil {
		return Issued{}, err
	}
	return Issued{Key: k, Secret: secret.Secret}, nil
}

// AccountKeys lists the account's visible keys, newest first.
func (w *WorkspaceKeys) AccountKeys(ctx context.Context, accountID string) ([]Key, error) {
	return w.store.AccountKeys(ctx, accountID)
}

// RevokeForAccount revokes one of the account's visible keys and forgets it in this replica's cache
// at once; other replicas stop accepting it within DefaultCacheTTL.
func (w *WorkspaceKeys) RevokeForAccount(ctx context.Context, accountID, keyID string) error {
	if _, err := uuid.Parse(keyID); err != nil {
		return fault.ErrNotFound
	}
	hash, err := w.store.RevokeAccountKey(ctx, accountID, keyID)
	if err != nil {
		return err
	}
	w.s.cache.Delete(hash)
	w.s.cache.Delete(idPrefix + keyID)
	return nil
}

// AgentKey returns the account's live hidden key named "agent", issuing one when there is none. Its
// secret is thrown away: the key exists so that OAuth access tokens have a key to meter and revoke.
func (w *WorkspaceKeys) AgentKey(ctx context.Context, accountID string) (Key, error) {
	k, err := w.store.AgentKey(ctx, accountID)
	if !errors.Is(err, fault.ErrNotFound) {
		return k, err
	}
	issued, err := w.issue(ctx, accountID, "agent", true)
	if errors.Is(err, ErrAgentExists) {
		return w.store.AgentKey(ctx, accountID)
	}
	return issued.Key, err
}
