package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// InsertPolicySignal stores a signal once: a redelivered event changes nothing and reports false.
func (s *Store) InsertPolicySignal(ctx context.Context, p policysignal.Signal) (bool, error) {
	if p.AffectedCodes == nil {
		p.AffectedCodes = []string{}
	}
	tag, err := s.pool.Exec(ctx, `
INSERT INTO policy_signals (change_event_id, organization, change_type, affected_codes, summary, policy_url, confidence, published_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (change_event_id) DO NOTHING`,
		p.ChangeEventID, p.Organization, p.ChangeType, p.AffectedCodes, p.Summary, p.PolicyURL, p.Confidence, p.PublishedAt)
	return tag.RowsAffected() == 1, err
}

const signalColumns = `change_event_id, organization, change_type, affected_codes, summary, policy_url, confidence, published_at, received_at`

// PolicySignals lists signals, newest first; an empty organization lists all. limit 0 means all.
func (s *Store) PolicySignals(ctx context.Context, organization string, limit int) ([]policysignal.Signal, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.pool.Query(ctx, `
SELECT `+signalColumns+` FROM policy_signals
WHERE $1 = '' OR organization = $1
ORDER BY published_at DESC, change_event_id
LIMIT CASE WHEN $2::int < 0 THEN NULL ELSE $2::int END`, organization, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (policysignal.Signal, error) {
		var p policysignal.Signal
		err := r.Scan(&p.ChangeEventID, &p.Organization, &p.ChangeType, &p.AffectedCodes, &p.Summary, &p.PolicyURL, &p.Confidence, &p.PublishedAt, &p.ReceivedAt)
		return p, err
	})
}

// PutPayerMapping creates or replaces a payer's organization.
func (s *Store) PutPayerMapping(ctx context.Context, payerID int64, organization string) (policysignal.Mapping, error) {
	m := policysignal.Mapping{PayerID: payerID, Organization: organization}
	err := s.pool.QueryRow(ctx, `
INSERT INTO payer_organizations (payer_id, organization) VALUES ($1, $2)
ON CONFLICT (payer_id) DO UPDATE SET organization = EXCLUDED.organization, updated_at = now()
RETURNING updated_at`, payerID, organization).Scan(&m.UpdatedAt)
	return m, err
}

// PayerMappings lists every mapping by payer id.
func (s *Store) PayerMappings(ctx context.Context) ([]policysignal.Mapping, error) {
	rows, err := s.pool.Query(ctx, `SELECT payer_id, organization, updated_at FROM payer_organizations ORDER BY payer_id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (policysignal.Mapping, error) {
		var m policysignal.Mapping
		err := r.Scan(&m.PayerID, &m.Organization, &m.UpdatedAt)
		return m, err
	})
}

// DeletePayerMapping removes a mapping; fault.ErrNotFound when there was none.
func (s *Store) DeletePayerMapping(ctx context.Context, payerID int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM payer_organizations WHERE payer_id = $1`, payerID)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return err
}
