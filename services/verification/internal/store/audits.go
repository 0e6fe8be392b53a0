package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Audit is a stored audit report: the report's JSON and what the routes look it up by.
type Audit struct {
	ID      uuid.UUID
	Kind    string
	URL     string
	Issuer  string
	Subject string
	// Verdict (conformance) and Score (readiness) are nil for the other kind.
	Verdict   *string
	Score     *int
	Report    []byte
	CreatedAt time.Time
}

// Audits stores audit reports.
type Audits struct{ pool *pgxpool.Pool }

// NewAudits returns the audit store over pool.
func NewAudits(pool *pgxpool.Pool) *Audits { return &Audits{pool: pool} }

// Insert stores a.
func (s *Audits) Insert(ctx context.Context, a Audit) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO audits (id, kind, url, issuer, subject, verdict, score, report, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		a.ID, a.Kind, a.URL, a.Issuer, a.Subject, a.Verdict, a.Score, a.Report, a.CreatedAt)
	return err
}

// Get returns the audit id of the token holder (issuer, subject); fault.ErrNotFound when there is
// none, or when another holder's.
func (s *Audits) Get(ctx context.Context, id uuid.UUID, issuer, subject string) (Audit, error) {
	var a Audit
	err := s.pool.QueryRow(ctx, `
		SELECT id, kind, url, issuer, subject, verdict, score, report, created_at
		FROM audits WHERE id = $1 AND issuer = $2 AND subject = $3`, id, issuer, subject).
		Scan(&a.ID, &a.Kind, &a.URL, &a.Issuer, &a.Subject, &a.Verdict, &a.Score, &a.Report, &a.CreatedAt)
	return a, noRows(err, fault.ErrNotFound)
}
