package blobstore_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
)

func TestPutOnceNeverOverwrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := blobstore.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.PutOnce(ctx, "a/b", strings.NewReader("first"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	if err := b.PutOnce(ctx, "a/b", strings.NewReader("second"), "text/plain"); err != nil {
		t.Fatal(err)
	}
	r, err := b.Open(ctx, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, _ := io.ReadAll(r); string(got) != "first" {
		t.Fatalf("got %q, want the first write", got)
	}
}

func TestConcurrentPutOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := blobstore.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	body := strings.Repeat("coverage criteria ", 10000)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- b.PutOnce(ctx, "same", strings.NewReader(body), "text/plain") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent PutOnce: %v", err)
		}
	}
}
