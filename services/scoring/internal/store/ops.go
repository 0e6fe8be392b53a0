package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// PlanUsage is one plan's persisted scoring calls in a period, summed over its keys.
type PlanUsage struct {
	Plan string
	// Keys is how many keys of the plan made at least one call in the period.
	Keys  int64
	Calls int64
}

// usageByPlan sums the period's counters by the plan of the key's account. It reads one month of
// usage_counters (its primary key starts with key_id, so this scans the table; the rows number the
// keys active in the month, which an operator's occasional snapshot can afford).
const usageByPlan = `
SELECT a.plan, count(*), coalesce(sum(u.calls), 0)::bigint
FROM usage_counters u
JOIN api_keys k ON k.id = u.key_id
JOIN accounts a ON a.id = k.account_id
WHERE u.period = $1 AND u.calls > 0
GROUP BY a.plan
ORDER BY a.plan`

// UsageByPlan returns the persisted usage of period ("2026-11") by plan, for the operations snapshot.
func (s *Store) UsageByPlan(ctx context.Context, period string) ([]PlanUsage, error) {
	rows, err := s.pool.Query(ctx, usageByPlan, period)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (PlanUsage, error) {
		var u PlanUsage
		err := row.Scan(&u.Plan, &u.Keys, &u.Calls)
		return u, err
	})
}
