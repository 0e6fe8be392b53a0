// Package archive stores fetched documents in the blob store, addressed by the SHA-256 of their bytes
// and never overwritten.
package archive

import (
	"context"
	"fmt"
	"io"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
)

// Archive is a content-addressed document store.
type Archive struct {
	*blobstore.Bucket
}

// Open opens the bucket at url, e.g. "file:///var/lib/ingestion/archive?create_dir=1" or
// "s3://bucket?region=...".
func Open(ctx context.Context, url string) (*Archive, error) {
	b, err := blobstore.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &Archive{b}, nil
}

// Key is where the document with this SHA-256 lives.
func Key(sha256Hex string) string {
	return "sha256/" + sha256Hex[:2] + "/" + sha256Hex
}

// Put writes r under the hash's key unless it is archived already, and returns the key. Across
// replicas sharing a local directory the blob driver's guard is per process; the database's unique key
// on the hash decides which asset row wins.
func (a *Archive) Put(ctx context.Context, sha256Hex string, r io.Reader, mediaType string) (string, error) {
	key := Key(sha256Hex)
	if err := a.PutOnce(ctx, key, r, mediaType); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	return key, nil
}
