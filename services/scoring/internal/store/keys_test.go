package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

func TestKeysByHashAndIDReadManyInOneQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, store.Migrations())
	s := store.New(pool)
	newKey := func(email, hash string) keys.Key {
		t.Helper()
		k, err := s.CreateKey(ctx, keys.NewKey{ID: uuid.NewString(), AccountID: uuid.NewString(), Email: email, Plan: "paid",
			Kind: "issued", Name: "n", Prefix: "sk_live", Hash: hash, Scopes: []string{"metrics:read"}})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	hashLive, hashRevoked, hashUnknown := auth.HashAPIKey("sk_live-a"), auth.HashAPIKey("sk_live-b"), auth.HashAPIKey("sk_live-c")
	live, revoked := newKey("ops@example.com", hashLive), newKey("", hashRevoked)
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, revoked.ID); err != nil {
		t.Fatal(err)
	}

	byHash, err := s.KeysByHash(ctx, []string{hashLive, hashRevoked, hashUnknown})
	if err != nil {
		t.Fatal(err)
	}
	if len(byHash) != 2 {
		t.Fatalf("KeysByHash: %d keys, want the 2 known ones: %+v", len(byHash), byHash)
	}
	if k := byHash[hashLive]; k.ID != live.ID || k.AccountID != live.AccountID || k.Email != "ops@example.com" ||
		k.Plan != "paid" || !k.HasScope("metrics:read") || k.RevokedAt != nil {
		t.Errorf("live key = %+v, want %+v", k, live)
	}
	if k := byHash[hashRevoked]; k.ID != revoked.ID || k.RevokedAt == nil || k.Email != "" {
		t.Errorf("revoked key = %+v: want its id, revoked_at set and no e-mail", k)
	}

	// An id comes back under the spelling it was asked with, so that the cache finds its entry.
	upper := strings.ToUpper(live.ID)
	byID, err := s.KeysByID(ctx, []string{upper, revoked.ID, uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != 2 || byID[upper].ID != live.ID || byID[revoked.ID].RevokedAt == nil {
		t.Fatalf("KeysByID = %+v, want the live key under %s and the revoked one", byID, upper)
	}
	if none, err := s.KeysByHash(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("KeysByHash(nil) = %v, %v; want an empty map", none, err)
	}
}
