package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

// TestDueSourcesAreClaimedOnce: replicas asking for due sources at the same moment share them, each
// source going to one of them, and a claimed source is not due again until its run sets its next run.
func TestDueSourcesAreClaimedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := open(t)
	const sources = 12
	for i := range sources {
		if _, err := s.CreateSource(ctx, ingest.Source{
			Organization: fmt.Sprintf("Org %d", i), Program: "P", Jurisdiction: "US", AllowedHosts: []string{"docs.example"},
			Adapter: "literal_url", AdapterConfig: map[string]any{"url": "https://docs.example/p"}, CadenceSeconds: 3600,
			TermsReviewState: "approved", Enabled: true,
		}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			ids, err := s.DueSources(ctx, 5)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				seen[id]++
			}
		})
	}
	wg.Wait()
	if len(seen) != sources {
		t.Fatalf("four claims of 5 took %d distinct sources, want all %d", len(seen), sources)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("source %s claimed %d times, want once", id, n)
		}
	}
	if again, err := s.DueSources(ctx, 50); err != nil || len(again) != 0 {
		t.Fatalf("claimed sources due again at once: %v %v, want none", again, err)
	}
}
