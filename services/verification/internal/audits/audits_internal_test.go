package audits

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

type storeStub struct{ name string }

func (storeStub) Insert(context.Context, Audit) error { return nil }
func (storeStub) Get(context.Context, uuid.UUID, string, string) (Audit, error) {
	return Audit{}, nil
}

// TestWithStoreSharesTheReplicasBound: every path that audits takes the replica's service with its own
// store, and they all draw on one bound of audits in flight.
func TestWithStoreSharesTheReplicasBound(t *testing.T) {
	base := New(nil, nil, nil, 2, nil)
	routes, watches := base.WithStore(storeStub{"routes"}), base.WithStore(storeStub{"watches"})
	if routes.store != (storeStub{"routes"}) || watches.store != (storeStub{"watches"}) || base.store != nil {
		t.Fatalf("stores: %v %v %v, want each copy its own and the base none", routes.store, watches.store, base.store)
	}
	routes.slots <- struct{}{}
	watches.slots <- struct{}{}
	select {
	case base.slots <- struct{}{}:
		t.Fatal("a third audit got a slot of a bound of 2 shared by both paths")
	default:
	}
}
