// Package blobstore opens the blob bucket a service keeps documents and artifacts in (gocloud.dev/blob:
// a local directory by default, S3-compatible storage in production) and writes objects once: an
// existing key is never overwritten, since a key names its content and an archive is evidence.
package blobstore

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

// Bucket is a write-once object store.
type Bucket struct {
	bucket *blob.Bucket
}

// Open opens the bucket at url, e.g. "file:///var/lib/x?create_dir=1" or "s3://bucket?region=...".
func Open(ctx context.Context, url string) (*Bucket, error) {
	b, err := blob.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("open blob bucket: %w", err)
	}
	return &Bucket{bucket: b}, nil
}

// Close releases the bucket.
func (b *Bucket) Close() error { return b.bucket.Close() }

// PutOnce writes r under key unless the key exists, in which case it leaves the object untouched and
// returns nil. The write is conditional (if-not-exists) where the driver supports it; the local
// directory driver guards only within one process, so callers that need an arbiter across replicas
// keep one in their database.
func (b *Bucket) PutOnce(ctx context.Context, key string, r io.Reader, contentType string) error {
	// Exists only saves the write of an object already there. Its error is not final: the file
	// driver reads the attributes sidecar, which a concurrent writer of the same object may be
	// writing (an EOF), and the write below, which refuses an object that exists, decides anyway.
	if ok, err := b.bucket.Exists(ctx, key); err == nil && ok {
		return nil
	}
	w, err := b.bucket.NewWriter(ctx, key, &blob.WriterOptions{ContentType: contentType, IfNotExist: true})
	if err != nil {
		return fmt.Errorf("blob %s: %w", key, err)
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Close()
		return fmt.Errorf("blob %s: write: %w", key, err)
	}
	if err := w.Close(); err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return nil // written meanwhile by a concurrent writer of the same object
		}
		return fmt.Errorf("blob %s: close: %w", key, err)
	}
	return nil
}

// Open returns the object's content.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	return b.bucket.NewReader(ctx, key, nil)
}
