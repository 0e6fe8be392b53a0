package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Audits implements audits.Store: it stores audit reports.
type Audits struct{ pool *pgxpool.Pool }

var _ audits.Store = (*Audits)(nil)

// NewAudits returns the audit store over pool.
func NewAudits(pool *pgxpool.Pool) *Audits { return &Audits{pool: pool} }

const insertAudit = `
		INSERT INTO audits (id, kind, url, issuer, subject, verdict, score, report, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// Insert stores a and, in the same transaction, the tool surface it observed (RecordSurface).
func (s *Audits) Insert(ctx context.Context, a audits.Audit) error {
	args := []any{a.ID, a.Kind, a.URL, a.Issuer, a.Subject, a.Verdict, a.Score, a.Report, a.CreatedAt}
	if a.Listing == nil {
		_, err := s.pool.Exec(ctx, insertAudit, args...)
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, insertAudit, args...); err != nil {
			return err
		}
		return RecordSurface(ctx, tx, SurfaceInput{URL: a.URL, Listing: a.Listing, AuditID: a.ID, ObservedAt: a.CreatedAt})
	})
}

// Get returns the audit id of the token holder (issuer, subject); fault.ErrNotFound when there is
// none, or when another holder's.
func (s *Audits) Get(ctx context.Context, id uuid.UUID, issuer, subject string) (audits.Audit, error) {
	var a audits.Audit
	err := s.pool.QueryRow(ctx, `
		SELECT id, kind, url, issuer, subject, verdict, score, report, created_at
		FROM audits WHERE id = $1 AND issuer = $2 AND subject = $3`, id, issuer, subject).
		Scan(&a.ID, &a.Kind, &a.URL, &a.Issuer, &a.Subject, &a.Verdict, &a.Score, &a.Report, &a.CreatedAt)
	return a, noRows(err, fault.ErrNotFound)
}
