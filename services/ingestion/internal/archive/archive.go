// Package archive stores fetched documents in a gocloud.dev/blob bucket (a local directory by default,
// S3-compatible storage in production), addressed by the SHA-256 of their bytes and never overwritten.
package archive

import (
	"context"
	"fmt"
	"io"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets
	_ "gocloud.dev/blob/memblob"  // mem:// buckets (tests)
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets
	"gocloud.dev/gcerrors"
)

// Archive is a content-addressed document store.
type Archive struct {
	bucket *blob.Bucket
}

// Open opens the bucket at url, e.g. "file:///var/lib/ingestion/archive?create_dir=1" or
// "s3://bucket?region=...".
func Open(ctx context.Context, url string) (*Archive, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open archive bucket: %w", err)
	}
	return &Archive{bucket: b}, nil
}

// Close releases the bucket.
func (a *Archive) Close() error { return a.bucket.Close() }

// Key is where the document with this SHA-256 lives.
func Key(sha256Hex string) string {
	return "sha256/" + sha256Hex[:2] + "/" + sha256Hex
}

// Put writes r under the hash's key unless the key exists: the write is conditional (if-not-exists), so
// an archived document is never replaced. Writing bytes that are already there is not an error. Across
// replicas sharing a local directory the driver's guard is per process; the database's unique key on the
// hash decides which asset row wins.
func (a *Archive) Put(ctx context.Context, sha256Hex string, r io.Reader, mediaType string) (string, error) {
	key := Key(sha256Hex)
	if ok, err := a.bucket.Exists(ctx, key); err != nil {
		return "", fmt.Errorf("archive: %w", err)
	} else if ok {
		return key, nil
	}
	w, err := a.bucket.NewWriter(ctx, key, &blob.WriterOptions{ContentType: mediaType, IfNotExist: true})
	if err != nil {
		return "", fmt.Errorf("archive: %w", err)
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return "", fmt.Errorf("archive: write %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return key, nil // written meanwhile by a concurrent fetch of the same bytes
		}
		return "", fmt.Errorf("archive: close %s: %w", key, err)
	}
	return key, nil
}

// Open returns the archived document with this key.
func (a *Archive) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	return a.bucket.NewReader(ctx, key, nil)
}
