package enforcement

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Service runs the enforcement use cases.
type Service struct {
	store Store
	intel Intelligence
	now   func() time.Time
	// snapshotsPerHour caps the new snapshots an organization stores in an hour (0: no cap).
	snapshotsPerHour int
}

// Option configures a Service.
type Option func(*Service)

// WithClock sets the clock of created_at times (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithSnapshotsPerHour caps the new snapshots an organization stores in any hour: each can be
// megabytes (about 2 KB a server of the registry), and a preview compiles the whole registry. A
// preview that finds its snapshot stored before is not counted. 0: no cap.
func WithSnapshotsPerHour(n int) Option { return func(s *Service) { s.snapshotsPerHour = n } }

// New returns the service over st (policies and their products) and intel (what compiles read).
func New(st Store, intel Intelligence, opts ...Option) *Service {
	s := &Service{store: st, intel: intel, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// clock is the time of a created record, in UTC and to the microsecond PostgreSQL keeps, so that an
// answer shows the time a later read shows.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// NewPolicy is the body of a policy creation; Rules nil creates no version.
type NewPolicy struct {
	Name, Description string
	Rules             *Rules
}

// CreatePolicy creates a policy of the organization, with its version 1 when p has rules.
func (s *Service) CreatePolicy(ctx context.Context, organizationID uuid.UUID, p NewPolicy) (Policy, error) {
	var v problems
	name := checkText(&v, "name", p.Name, maxName, true)
	description := checkText(&v, "description", p.Description, maxText, false)
	var first *Version
	if p.Rules != nil {
		rules := p.Rules.normalize(&v, "rules")
		ver, err := newVersion(rules, "", s.clock())
		if err != nil {
			return Policy{}, err
		}
		first = &ver
	}
	if err := v.err(); err != nil {
		return Policy{}, err
	}
	policy := Policy{ID: uuid.New(), OrganizationID: organizationID, Name: name, Description: description, CreatedAt: s.clock()}
	if first != nil {
		first.PolicyID = policy.ID
	}
	return s.store.CreatePolicy(ctx, policy, first)
}

// GetPolicy reads a policy of the organization.
func (s *Service) GetPolicy(ctx context.Context, organizationID, id uuid.UUID) (Policy, error) {
	return s.store.GetPolicy(ctx, organizationID, id)
}

// CreateVersion adds the next version of a policy of the organization.
func (s *Service) CreateVersion(ctx context.Context, organizationID, policyID uuid.UUID, rules *Rules, note string) (Version, error) {
	var v problems
	note = checkText(&v, "note", note, maxText, false)
	if rules == nil {
		v.add("rules", "rules are required")
	} else {
		normalized := rules.normalize(&v, "rules")
		rules = &normalized
	}
	if err := v.err(); err != nil {
		return Version{}, err
	}
	ver, err := newVersion(*rules, note, s.clock())
	if err != nil {
		return Version{}, err
	}
	ver.PolicyID = policyID
	return s.store.AddVersion(ctx, organizationID, ver)
}

func newVersion(rules Rules, note string, now time.Time) (Version, error) {
	raw, sum, err := Canonical(rules)
	if err != nil {
		return Version{}, fmt.Errorf("canonical rules: %w", err)
	}
	return Version{ID: uuid.New(), Rules: rules, RulesJSON: raw, RulesSHA256: sum, Note: note, CreatedAt: now}, nil
}

// Preview compiles a version of a policy (0: the latest) against the current intelligence and
// stores the result as a snapshot; the same version over unchanged intelligence gives the snapshot
// made before.
func (s *Service) Preview(ctx context.Context, organizationID, policyID uuid.UUID, version int, format string) (Snapshot, error) {
	var v problems
	if version < 0 {
		v.add("version", "version must be a positive version number (or 0: the latest)")
	}
	if format != "" {
		v.add("format", "format is for POST /snapshots/{snapshot_id}/artifacts; a preview takes none")
	}
	if err := v.err(); err != nil {
		return Snapshot{}, err
	}
	ver, err := s.store.GetVersion(ctx, organizationID, policyID, version)
	if err != nil {
		return Snapshot{}, err
	}
	servers, err := s.intel.Servers(ctx)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read the servers: %w", err)
	}
	audits, err := s.intel.Audits(ctx, remoteURLs(servers))
	if err != nil {
		return Snapshot{}, fmt.Errorf("read the audits: %w", err)
	}
	content := Compile(ver.Rules, ver.RulesSHA256, servers, audits)
	raw, sum := content.CanonicalJSON()
	return s.store.PutSnapshot(ctx, Snapshot{
		ID: uuid.New(), OrganizationID: organizationID, PolicyID: policyID, PolicyVersionID: ver.ID, Version: ver.Version,
		ContentSHA256: sum, ContentJSON: raw, Content: content, Summary: content.Summarize(), CreatedAt: s.clock(),
	}, s.snapshotsPerHour, time.Hour)
}

// remoteURLs are the distinct remote URLs of servers, sorted.
func remoteURLs(servers []ServerInput) []string {
	var urls []string
	for _, s := range servers {
		for _, r := range s.Remotes {
			urls = append(urls, r.URL)
		}
	}
	slices.Sort(urls)
	return slices.Compact(urls)
}

// GetSnapshot reads a snapshot of the organization.
func (s *Service) GetSnapshot(ctx context.Context, organizationID, id uuid.UUID) (Snapshot, error) {
	return s.store.GetSnapshot(ctx, organizationID, id)
}

// CreateArtifact generates the artifact of a snapshot in format; version, when not 0, must be the
// snapshot's. The same snapshot and format give the artifact made before.
func (s *Service) CreateArtifact(ctx context.Context, organizationID, snapshotID uuid.UUID, version int, format string) (Artifact, error) {
	var v problems
	if !slices.Contains(Formats, format) {
		v.add("format", "format must be json_allowlist or opa_rego")
	}
	if version < 0 {
		v.add("version", "version must be the snapshot's version (or 0)")
	}
	if err := v.err(); err != nil {
		return Artifact{}, err
	}
	snap, err := s.store.GetSnapshot(ctx, organizationID, snapshotID)
	if err != nil {
		return Artifact{}, err
	}
	if version != 0 && version != snap.Version {
		v.add("version", "version must be the snapshot's version (%d) or 0", snap.Version)
		return Artifact{}, v.err()
	}
	ver, err := s.store.GetVersion(ctx, organizationID, snap.PolicyID, snap.Version)
	if err != nil {
		return Artifact{}, err
	}
	files, err := Generate(format, snap, ver.Rules)
	if err != nil {
		return Artifact{}, err
	}
	return s.store.PutArtifact(ctx, Artifact{
		ID: uuid.New(), OrganizationID: organizationID, SnapshotID: snap.ID, PolicyID: snap.PolicyID, Version: snap.Version,
		Format: format, SHA256: ManifestSHA256(files), Files: files, CreatedAt: s.clock(),
	})
}

// GetArtifact reads an artifact of the organization with its files.
func (s *Service) GetArtifact(ctx context.Context, organizationID, id uuid.UUID) (Artifact, error) {
	return s.store.GetArtifact(ctx, organizationID, id)
}

// DecodeContent reads a snapshot's stored canonical JSON.
func DecodeContent(raw []byte) (Content, error) {
	var c Content
	if err := json.Unmarshal(raw, &c); err != nil {
		return Content{}, fmt.Errorf("snapshot content: %w", err)
	}
	return c, nil
}
