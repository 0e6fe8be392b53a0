package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
)

// FeedSource streams the registry tables as data-feed rows (feeds.Source). Rows are read with a
// cursor-backed query and handed on one at a time, so an export of any size holds one row in memory.
type FeedSource struct {
	pool *pgxpool.Pool
}

var _ feeds.Source = (*FeedSource)(nil)

// NewFeedSource returns the registry's data-feed source.
func NewFeedSource(pool *pgxpool.Pool) *FeedSource { return &FeedSource{pool: pool} }

var feedQueries = map[string]string{
	"servers": `
SELECT s.namespace, s.name, sn.version, sn.status, coalesce(sn.server_json->>'description', ''),
       coalesce(sn.server_json->'repository'->>'url', ''), s.first_seen_at, s.last_seen_at
FROM intel_servers s JOIN intel_snapshots sn ON sn.id = s.current_snapshot_id
ORDER BY s.namespace, s.name`,
	"changes": `
SELECT id::text, namespace, name, from_version, to_version, change_type, risk, field, old_value, new_value, detected_at
FROM intel_changes ORDER BY seq`,
}

// Rows streams one dataset's rows, keyed by the dataset's column names.
func (f *FeedSource) Rows(ctx context.Context, dataset string, yield func(map[string]any) error) error {
	d, ok := feeds.DatasetNamed(dataset)
	q, known := feedQueries[dataset]
	if !ok || !known {
		return fmt.Errorf("feed source: unknown dataset %q", dataset)
	}
	rows, err := f.pool.Query(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return err
		}
		row := make(map[string]any, len(d.Columns))
		for i, c := range d.Columns {
			v := vals[i]
			if t, ok := v.(time.Time); ok {
				v = t.UTC().Format(time.RFC3339Nano)
			}
			row[c] = v
		}
		if err := yield(row); err != nil {
			return err
		}
	}
	return rows.Err()
}
