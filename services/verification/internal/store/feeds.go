package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
)

// Feeds implements feeds.Store.
type Feeds struct {
	pool *pgxpool.Pool
}

var _ feeds.Store = (*Feeds)(nil)

// NewFeeds returns the data-feed artifact store.
func NewFeeds(pool *pgxpool.Pool) *Feeds { return &Feeds{pool: pool} }

// InsertArtifacts records exported artifacts in one transaction.
func (f *Feeds) InsertArtifacts(ctx context.Context, arts []feeds.Artifact) error {
	return pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		for _, a := range arts {
			if _, err := tx.Exec(ctx, `
INSERT INTO feed_artifacts (id, dataset, format, sha256, size_bytes, rows, blob_key, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, a.Dataset, a.Format, a.SHA256, a.Size, a.Rows, a.BlobKey, a.CreatedAt); err != nil {
				return err
			}
		}
		return nil
	})
}

const artifactColumns = `id, dataset, format, sha256, size_bytes, rows, blob_key, created_at`

func scanArtifact(row pgx.Row) (feeds.Artifact, error) {
	var a feeds.Artifact
	err := row.Scan(&a.ID, &a.Dataset, &a.Format, &a.SHA256, &a.Size, &a.Rows, &a.BlobKey, &a.CreatedAt)
	return a, err
}

// ListArtifacts returns a dataset's artifacts newest first (keyset on created_at).
func (f *Feeds) ListArtifacts(ctx context.Context, q feeds.Query) ([]feeds.Artifact, error) {
	where := []string{"dataset = $1"}
	args := []any{q.Dataset}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Format != "" {
		add("format = $%d", q.Format)
	}
	if q.Since != nil {
		add("created_at >= $%d", *q.Since)
	}
	if q.Until != nil {
		add("created_at <= $%d", *q.Until)
	}
	if q.Before != nil {
		add("created_at < $%d", *q.Before)
	}
	args = append(args, q.Limit)
	rows, err := f.pool.Query(ctx, `SELECT `+artifactColumns+` FROM feed_artifacts WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(` ORDER BY created_at DESC LIMIT $%d`, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (feeds.Artifact, error) { return scanArtifact(r) })
}

// GetArtifact returns one artifact of a dataset.
func (f *Feeds) GetArtifact(ctx context.Context, dataset string, id uuid.UUID) (feeds.Artifact, error) {
	a, err := scanArtifact(f.pool.QueryRow(ctx, `SELECT `+artifactColumns+` FROM feed_artifacts WHERE id = $1 AND dataset = $2`, id, dataset))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fault.ErrNotFound
	}
	return a, err
}

// ArtifactByID returns one artifact of any dataset.
func (f *Feeds) ArtifactByID(ctx context.Context, id uuid.UUID) (feeds.Artifact, error) {
	a, err := scanArtifact(f.pool.QueryRow(ctx, `SELECT `+artifactColumns+` FROM feed_artifacts WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fault.ErrNotFound
	}
	return a, err
}

// Catalog counts artifacts per dataset.
func (f *Feeds) Catalog(ctx context.Context) (map[string]feeds.CatalogEntry, error) {
	rows, err := f.pool.Query(ctx, `SELECT dataset, count(*), max(created_at) FROM feed_artifacts GROUP BY dataset`)
	if err != nil {
		return nil, err
	}
	out := map[string]feeds.CatalogEntry{}
	for rows.Next() {
		var name string
		var e feeds.CatalogEntry
		var latest time.Time
		if err := rows.Scan(&name, &e.Count, &latest); err != nil {
			return nil, err
		}
		e.Latest = &latest
		out[name] = e
	}
	return out, rows.Err()
}

// WithExportLock runs fn under a session advisory lock taken without waiting: one replica
// exports, the others skip the round.
func (f *Feeds) WithExportLock(ctx context.Context, fn func(context.Context) error) (bool, error) {
	conn, err := f.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('data-feed export', 0))`).Scan(&locked); err != nil {
		return false, err
	}
	if !locked {
		return false, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('data-feed export', 0))`)
	}()
	return true, fn(ctx)
}
