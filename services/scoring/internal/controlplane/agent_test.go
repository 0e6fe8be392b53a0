package controlplane_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// fixture is a control plane on a fresh, migrated database, with cheap password hashing.
func fixture(t *testing.T, opts ...controlplane.Option) (*controlplane.Service, *keys.Service, *store.Store, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t, store.Migrations())
	st := store.New(pool)
	creds := keys.New(st, []byte("0123456789abcdef0123456789abcdef"))
	cp := controlplane.New(st, keys.NewWorkspaceKeys(creds, st, controlplane.MaxActiveKeys), "http://scoring.test",
		append([]controlplane.Option{controlplane.WithHashParams(controlplane.HashParams{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})}, opts...)...)
	return cp, creds, st, pool
}

func TestAgentKeyMakesOneHiddenKeyPerWorkspace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp, creds, st, pool := fixture(t)

	// Sign-ins at once for one new e-mail: one workspace, one key.
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := cp.AgentKey(ctx, "Agent.Owner@Example.com")
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent AgentKey calls: got ids %v, want one id", ids)
		}
	}
	k, err := creds.ByID(ctx, ids[0])
	if err != nil {
		t.Fatalf("ByID(agent key): %v", err)
	}
	if k.Email != "agent.owner@example.com" || k.Plan != "trial" || k.Name != "agent" {
		t.Errorf("agent key: got email %q plan %q name %q; want agent.owner@example.com, trial, agent", k.Email, k.Plan, k.Name)
	}
	visible, err := st.AccountKeys(ctx, k.AccountID)
	if err != nil || len(visible) != 0 {
		t.Errorf("the workspace's visible keys: got %v, %v; want none (the agent key is hidden)", visible, err)
	}

	// The workspace has no password: neither login nor a signup can take it over.
	if _, err := cp.Login(ctx, controlplane.Credentials{Email: "agent.owner@example.com", Password: "correct horse battery staple"}); !errors.Is(err, controlplane.ErrBadCredentials) {
		t.Errorf("login to a workspace without a password: got %v, want ErrBadCredentials", err)
	}
	if _, err := cp.Signup(ctx, controlplane.Credentials{Email: "agent.owner@example.com", Password: "correct horse battery staple"}, ""); !errors.Is(err, controlplane.ErrEmailTaken) {
		t.Errorf("signup over a workspace without a password: got %v, want ErrEmailTaken", err)
	}

	// A revoked agent key is replaced by a new one.
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE account_id = $1 AND hidden`, k.AccountID); err != nil {
		t.Fatal(err)
	}
	again, err := cp.AgentKey(ctx, "agent.owner@example.com")
	if err != nil || again == ids[0] {
		t.Fatalf("AgentKey after revocation: got %q, %v; want a new id", again, err)
	}
	// A replica that has not cached the key (this one has, for DefaultCacheTTL) refuses it.
	if _, err := keys.New(st, nil).ByID(ctx, ids[0]); !errors.Is(err, keys.ErrUnauthenticated) {
		t.Errorf("ByID(revoked agent key): got %v, want ErrUnauthenticated", err)
	}
}

func TestAgentKeyJoinsTheWorkspaceOfASignup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cp, creds, _, _ := fixture(t)
	o, err := cp.Signup(ctx, controlplane.Credentials{Email: "owner@example.com", Password: "correct horse battery staple"}, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	id, err := cp.AgentKey(ctx, "OWNER@example.com")
	if err != nil {
		t.Fatal(err)
	}
	k, err := creds.ByID(ctx, id)
	if err != nil || k.AccountID != o.Workspace.ID {
		t.Fatalf("agent key of a signed-up workspace: got account %q, %v; want %q", k.AccountID, err, o.Workspace.ID)
	}
	list, err := cp.ListKeys(ctx, o.Session)
	if err != nil || len(list) != 0 {
		t.Errorf("the workspace's key list: got %v, %v; want empty (the agent key is hidden)", list, err)
	}
	if _, err := cp.AgentKey(ctx, "not an e-mail"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("AgentKey(not an e-mail): got %v, want fault.ErrInvalid", err)
	}
}
