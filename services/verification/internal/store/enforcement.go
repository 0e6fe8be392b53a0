package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Enforcement stores enforcement policies, their versions, snapshots and artifacts
// (enforcement.Store), and reads what a compile decides on from the intelligence and audit tables
// (enforcement.Intelligence, in enforcement_intel.go).
type Enforcement struct {
	pool *pgxpool.Pool
}

// NewEnforcement returns the enforcement store.
func NewEnforcement(pool *pgxpool.Pool) *Enforcement { return &Enforcement{pool: pool} }

const enforcementPolicyName = "enforcement_policies_organization_id_name_key"

// CreatePolicy stores p and, when first is not nil, its version 1, in one transaction.
func (s *Enforcement) CreatePolicy(ctx context.Context, p enforcement.Policy, first *enforcement.Version) (enforcement.Policy, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO enforcement_policies (id, organization_id, name, description, created_at)
VALUES ($1, $2, $3, $4, $5)`, p.ID, p.OrganizationID, p.Name, p.Description, p.CreatedAt); err != nil {
			if code, constraint := sqlState(err); code == sqlstateUnique && constraint == enforcementPolicyName {
				return enforcement.ErrPolicyNameExists
			}
			return err
		}
		if first == nil {
			return nil
		}
		v, err := insertEnforcementVersion(ctx, tx, p.OrganizationID, *first)
		p.Versions = []enforcement.Version{v}
		return err
	})
	if err != nil {
		return enforcement.Policy{}, err
	}
	return p, nil
}

// insertEnforcementVersion stores v as the next version of its policy, whose row the caller has locked or
// just created.
func insertEnforcementVersion(ctx context.Context, tx pgx.Tx, organizationID uuid.UUID, v enforcement.Version) (enforcement.Version, error) {
	err := tx.QueryRow(ctx, `INSERT INTO enforcement_policy_versions (id, policy_id, organization_id, version, rules, rules_sha256, note, created_at)
SELECT $1, $2, $3, COALESCE(MAX(version), 0) + 1, $4, $5, $6, $7 FROM enforcement_policy_versions WHERE policy_id = $2
RETURNING version`, v.ID, v.PolicyID, organizationID, string(v.RulesJSON), v.RulesSHA256, v.Note, v.CreatedAt).Scan(&v.Version)
	return v, err
}

// GetPolicy reads a policy of the organization with its versions, oldest first.
func (s *Enforcement) GetPolicy(ctx context.Context, organizationID, id uuid.UUID) (enforcement.Policy, error) {
	p := enforcement.Policy{ID: id, OrganizationID: organizationID}
	err := s.pool.QueryRow(ctx, `SELECT name, description, created_at FROM enforcement_policies WHERE id = $1 AND organization_id = $2`,
		id, organizationID).Scan(&p.Name, &p.Description, &p.CreatedAt)
	if err != nil {
		return enforcement.Policy{}, noRows(err, fault.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+enforcementVersionColumns+` FROM enforcement_policy_versions WHERE policy_id = $1 ORDER BY version`, id)
	if err != nil {
		return enforcement.Policy{}, err
	}
	p.Versions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (enforcement.Version, error) { return scanEnforcementVersion(r) })
	return p, err
}

const enforcementVersionColumns = `id, policy_id, version, rules, rules_sha256, note, created_at`

func scanEnforcementVersion(row pgx.Row) (enforcement.Version, error) {
	var v enforcement.Version
	var rules string
	if err := row.Scan(&v.ID, &v.PolicyID, &v.Version, &rules, &v.RulesSHA256, &v.Note, &v.CreatedAt); err != nil {
		return enforcement.Version{}, err
	}
	v.RulesJSON = []byte(rules)
	if err := json.Unmarshal(v.RulesJSON, &v.Rules); err != nil {
		return enforcement.Version{}, fmt.Errorf("version %s rules: %w", v.ID, err)
	}
	return v, nil
}

// AddVersion stores v as the next version of a policy of the organization; the policy's row is
// locked so that two versions added at once get consecutive numbers.
func (s *Enforcement) AddVersion(ctx context.Context, organizationID uuid.UUID, v enforcement.Version) (enforcement.Version, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM enforcement_policies WHERE id = $1 AND organization_id = $2 FOR UPDATE`,
			v.PolicyID, organizationID).Scan(&one); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		var err error
		v, err = insertEnforcementVersion(ctx, tx, organizationID, v)
		return err
	})
	if err != nil {
		return enforcement.Version{}, err
	}
	return v, nil
}

// GetVersion reads version number version (0: the latest) of a policy of the organization.
func (s *Enforcement) GetVersion(ctx context.Context, organizationID, policyID uuid.UUID, version int) (enforcement.Version, error) {
	v, err := scanEnforcementVersion(s.pool.QueryRow(ctx, `SELECT `+enforcementVersionColumns+` FROM enforcement_policy_versions
WHERE policy_id = $1 AND organization_id = $2 AND ($3 = 0 OR version = $3) ORDER BY version DESC LIMIT 1`, policyID, organizationID, version))
	if !errors.Is(err, pgx.ErrNoRows) {
		return v, err
	}
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1 FROM enforcement_policies WHERE id = $1 AND organization_id = $2`, policyID, organizationID).Scan(&one); err != nil {
		return enforcement.Version{}, noRows(err, fault.ErrNotFound)
	}
	if version == 0 {
		return enforcement.Version{}, enforcement.ErrNoVersion
	}
	return enforcement.Version{}, enforcement.ErrUnknownVersion
}

// PutSnapshot returns the snapshot stored before for snap's version and content (its id and time:
// the content is the same, by its SHA-256, so its megabytes are not read back), or stores snap
// unless its organization stored limit snapshots or more since snap.CreatedAt less window. Two
// previews at once may both pass the count: the cap bounds storage, it is not exact.
func (s *Enforcement) PutSnapshot(ctx context.Context, snap enforcement.Snapshot, limit int, window time.Duration) (enforcement.Snapshot, error) {
	existing := func() error {
		return s.pool.QueryRow(ctx, `SELECT id, created_at FROM enforcement_snapshots WHERE policy_version_id = $1 AND content_sha256 = $2`,
			snap.PolicyVersionID, snap.ContentSHA256).Scan(&snap.ID, &snap.CreatedAt)
	}
	if err := existing(); err == nil || !errors.Is(err, pgx.ErrNoRows) {
		return snap, err
	}
	if limit > 0 {
		var n int
		var oldest *time.Time
		if err := s.pool.QueryRow(ctx, `SELECT count(*), min(created_at) FROM enforcement_snapshots WHERE organization_id = $1 AND created_at > $2`,
			snap.OrganizationID, snap.CreatedAt.Add(-window)).Scan(&n, &oldest); err != nil {
			return enforcement.Snapshot{}, err
		}
		if n >= limit {
			wait := time.Second
			if oldest != nil {
				wait = max(wait, oldest.Add(window).Sub(snap.CreatedAt).Round(time.Second))
			}
			return enforcement.Snapshot{}, &enforcement.SnapshotLimitError{Limit: limit, RetryAfter: wait}
		}
	}
	sum := snap.Summary
	if _, err := s.pool.Exec(ctx, `INSERT INTO enforcement_snapshots (id, organization_id, policy_id, policy_version_id, version,
    content_sha256, content, servers_allowed, servers_denied, tools_allowed, tools_denied, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (policy_version_id, content_sha256) DO NOTHING`,
		snap.ID, snap.OrganizationID, snap.PolicyID, snap.PolicyVersionID, snap.Version, snap.ContentSHA256, string(snap.ContentJSON),
		sum.ServersAllowed, sum.ServersDenied, sum.ToolsAllowed, sum.ToolsDenied, snap.CreatedAt); err != nil {
		return enforcement.Snapshot{}, err
	}
	return snap, existing()
}

const enforcementSnapshotColumns = `id, organization_id, policy_id, policy_version_id, version, content_sha256, content,
    servers_allowed, servers_denied, tools_allowed, tools_denied, created_at`

func scanEnforcementSnapshot(row pgx.Row) (enforcement.Snapshot, error) {
	var snap enforcement.Snapshot
	var content string
	sum := &snap.Summary
	if err := row.Scan(&snap.ID, &snap.OrganizationID, &snap.PolicyID, &snap.PolicyVersionID, &snap.Version, &snap.ContentSHA256, &content,
		&sum.ServersAllowed, &sum.ServersDenied, &sum.ToolsAllowed, &sum.ToolsDenied, &snap.CreatedAt); err != nil {
		return enforcement.Snapshot{}, noRows(err, fault.ErrNotFound)
	}
	snap.ContentJSON = []byte(content)
	c, err := enforcement.DecodeContent(snap.ContentJSON)
	snap.Content = c
	return snap, err
}

// GetSnapshot reads a snapshot of the organization.
func (s *Enforcement) GetSnapshot(ctx context.Context, organizationID, id uuid.UUID) (enforcement.Snapshot, error) {
	return scanEnforcementSnapshot(s.pool.QueryRow(ctx, `SELECT `+enforcementSnapshotColumns+` FROM enforcement_snapshots WHERE id = $1 AND organization_id = $2`,
		id, organizationID))
}

// PutArtifact stores a's files by their SHA-256 (a content already stored is kept as it is) and a,
// unless its snapshot already has an artifact of its format; it returns the one stored.
func (s *Enforcement) PutArtifact(ctx context.Context, a enforcement.Artifact) (enforcement.Artifact, error) {
	files, err := json.Marshal(a.Files)
	if err != nil {
		return enforcement.Artifact{}, err
	}
	var id uuid.UUID
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, f := range a.Files {
			if _, err := tx.Exec(ctx, `INSERT INTO enforcement_files (sha256, content) VALUES ($1, $2) ON CONFLICT (sha256) DO NOTHING`,
				f.SHA256, f.Content); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO enforcement_artifacts (id, organization_id, snapshot_id, format, sha256, files, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (snapshot_id, format) DO NOTHING`,
			a.ID, a.OrganizationID, a.SnapshotID, a.Format, a.SHA256, files, a.CreatedAt); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT id FROM enforcement_artifacts WHERE snapshot_id = $1 AND format = $2`, a.SnapshotID, a.Format).Scan(&id)
	})
	if err != nil {
		return enforcement.Artifact{}, err
	}
	return s.GetArtifact(ctx, a.OrganizationID, id)
}

// GetArtifact reads an artifact of the organization with its files' contents.
func (s *Enforcement) GetArtifact(ctx context.Context, organizationID, id uuid.UUID) (enforcement.Artifact, error) {
	var a enforcement.Artifact
	var files []byte
	err := s.pool.QueryRow(ctx, `SELECT a.id, a.organization_id, a.snapshot_id, s.policy_id, s.version, a.format, a.sha256, a.files, a.created_at
FROM enforcement_artifacts a JOIN enforcement_snapshots s ON s.id = a.snapshot_id WHERE a.id = $1 AND a.organization_id = $2`,
		id, organizationID).Scan(&a.ID, &a.OrganizationID, &a.SnapshotID, &a.PolicyID, &a.Version, &a.Format, &a.SHA256, &files, &a.CreatedAt)
	if err != nil {
		return enforcement.Artifact{}, noRows(err, fault.ErrNotFound)
	}
	if err := json.Unmarshal(files, &a.Files); err != nil {
		return enforcement.Artifact{}, fmt.Errorf("artifact %s files: %w", a.ID, err)
	}
	sums := make([]string, 0, len(a.Files))
	for _, f := range a.Files {
		sums = append(sums, f.SHA256)
	}
	rows, err := s.pool.Query(ctx, `SELECT sha256, content FROM enforcement_files WHERE sha256 = ANY($1)`, sums)
	if err != nil {
		return enforcement.Artifact{}, err
	}
	contents := map[string][]byte{}
	var sum string
	var content []byte
	if _, err := pgx.ForEachRow(rows, []any{&sum, &content}, func() error {
		contents[sum] = append([]byte(nil), content...)
		return nil
	}); err != nil {
		return enforcement.Artifact{}, err
	}
	for i, f := range a.Files {
		c, ok := contents[f.SHA256]
		if !ok {
			return enforcement.Artifact{}, fmt.Errorf("artifact %s: no stored content of %s", a.ID, f.Path)
		}
		a.Files[i].Content = c
	}
	return a, nil
}
