package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// serviceStages splits the service's commit-to-POST delay of the open loop's deliveries into the
// pipeline's stages, from the times its tables keep (one clock: the bench, the service and PostgreSQL
// share the machine): the start of the matcher's transaction, and the start of the first attempt's
// POST. The first stage starts with the change's INSERT (the outbox keeps its statement's time, not
// its commit's), so it includes the change's own commit, which the end-to-end delay does not.
func serviceStages(ctx context.Context, pool *pgxpool.Pool, changes []string) (string, error) {
	stages := []struct {
		name string
		d    []time.Duration
	}{
		{name: "change inserted -> matcher transaction (commit included)"},
		{name: "matcher transaction -> first attempt's POST"},
	}
	rows, err := pool.Query(ctx, `
SELECT extract(epoch FROM e.created_at - o.created_at), extract(epoch FROM a.started_at - e.created_at)
FROM webhook_events e
JOIN outbox o ON o.id = e.change_id::uuid
JOIN webhook_deliveries d ON d.event_id = e.id
JOIN webhook_attempts a ON a.delivery_id = d.id AND a.attempt = 1
WHERE e.change_id = ANY ($1)`, changes)
	if err != nil {
		return "", err
	}
	var secs [2]float64
	_, err = pgx.ForEachRow(rows, []any{&secs[0], &secs[1]}, func() error {
		for i, v := range secs {
			stages[i].d = append(stages[i].d, time.Duration(v*float64(time.Second)))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, s := range stages {
		if len(s.d) == 0 {
			continue
		}
		slices.Sort(s.d)
		pct := func(p float64) time.Duration { return s.d[int(p*float64(len(s.d)-1))] }
		fmt.Fprintf(&out, "%-60s p50 %s  p99 %s  max %s\n", "  "+s.name, ms(pct(0.5)), ms(pct(0.99)), ms(s.d[len(s.d)-1]))
	}
	return out.String(), nil
}
