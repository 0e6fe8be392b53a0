package archive_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/archive"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestPutNeverOverwrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := archive.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sha := sum("policy v1")
	key, err := a.Put(ctx, sha, strings.NewReader("policy v1"), "text/html")
	if err != nil {
		t.Fatal(err)
	}
	// A second write under the same hash with other bytes (which a correct caller never sends) must
	// leave the archived object untouched.
	if _, err := a.Put(ctx, sha, strings.NewReader("tampered"), "text/html"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Open(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, _ := io.ReadAll(r)
	if string(got) != "policy v1" {
		t.Fatalf("archived bytes: got %q, want the first write", got)
	}
}

func TestConcurrentPutsOfTheSameBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := archive.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	body := strings.Repeat("coverage criteria ", 10000)
	sha := sum(body)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := a.Put(ctx, sha, strings.NewReader(body), "text/plain")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Put: %v", err)
		}
	}
}
