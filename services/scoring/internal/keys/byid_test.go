package keys

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// byIDStore holds keys by id.
type byIDStore struct {
	memStore
	byID map[string]Key
}

func (s *byIDStore) KeyByID(_ context.Context, id string) (Key, error) {
	if k, ok := s.byID[id]; ok {
		return k, nil
	}
	return Key{}, fault.ErrNotFound
}

func (s *byIDStore) KeysByID(_ context.Context, ids []string) (map[string]Key, error) {
	out := map[string]Key{}
	for _, id := range ids {
		if k, ok := s.byID[id]; ok {
			out[id] = k
		}
	}
	return out, nil
}

func TestByIDRevokedIsUnknown(t *testing.T) {
	t.Parallel()
	revoked := time.Now()
	live := Key{ID: "6f1c1f0e-3c55-4d57-9d1c-0d6f5f2b1a01", Plan: "trial", Scopes: []string{ScopeMetricsRead}}
	st := &byIDStore{byID: map[string]Key{
		live.ID:                                {ID: live.ID, Plan: live.Plan, Scopes: live.Scopes},
		"6f1c1f0e-3c55-4d57-9d1c-0d6f5f2b1a02": {ID: "6f1c1f0e-3c55-4d57-9d1c-0d6f5f2b1a02", RevokedAt: &revoked},
	}}
	s := New(st, []byte("secret"))
	for _, tc := range []struct {
		id      string
		wantErr error
	}{
		{live.ID, nil},
		{"6f1c1f0e-3c55-4d57-9d1c-0d6f5f2b1a02", ErrUnauthenticated}, // revoked
		{"6f1c1f0e-3c55-4d57-9d1c-0d6f5f2b1a03", ErrUnauthenticated}, // unknown
		{"not-a-uuid", ErrUnauthenticated},
	} {
		k, err := s.ByID(context.Background(), tc.id)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("ByID(%s): error %v, want %v", tc.id, err, tc.wantErr)
		}
		if tc.wantErr == nil && (k.ID != live.ID || k.Plan != "trial" || !k.HasScope(ScopeMetricsRead)) {
			t.Errorf("ByID(%s) = %+v, want the key with its plan and scopes", tc.id, k)
		}
	}
}
