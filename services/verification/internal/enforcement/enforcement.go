// Package enforcement is the use case of enforcement policies (docs/enforcement.md): an
// organization's policies and their immutable versions of rules, the compiler that decides every
// server, remote, package and tool of the registry intelligence (with the latest audits of each
// remote URL) by a version's rules into an immutable snapshot, and the generators of the artifacts a
// gateway consumes (a JSON allowlist with its JSON Schema, an Open Policy Agent policy with its data
// document). It declares the store it needs and imports no proto, HTTP or gRPC types.
package enforcement

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// Errors besides fault's (fault.ErrNotFound for an unknown or another organization's id,
// *fault.ValidationError for a bad body).
var (
	// ErrPolicyNameExists: the organization already has a policy of this name.
	ErrPolicyNameExists = errors.New("enforcement policy name exists")
	// ErrNoVersion: the policy has no version to compile yet.
	ErrNoVersion = errors.New("the policy has no version")
	// ErrUnknownVersion: the policy has no version of this number.
	ErrUnknownVersion = errors.New("the policy has no version of this number")
	// ErrSnapshotLimit: the organization stored as many new snapshots lately as it may (see
	// SnapshotLimitError).
	ErrSnapshotLimit = errors.New("enforcement snapshot limit reached")
)

// SnapshotLimitError is ErrSnapshotLimit with the cap and the wait until a snapshot may be stored.
type SnapshotLimitError struct {
	Limit      int
	RetryAfter time.Duration
}

func (e *SnapshotLimitError) Error() string { return ErrSnapshotLimit.Error() }

// Unwrap returns ErrSnapshotLimit.
func (e *SnapshotLimitError) Unwrap() error { return ErrSnapshotLimit }

// Policy is an organization's policy with its versions, oldest first.
type Policy struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Name           string
	Description    string
	CreatedAt      time.Time
	Versions       []Version
}

// LatestVersion is the number of the policy's newest version, 0 when it has none.
func (p Policy) LatestVersion() int {
	if len(p.Versions) == 0 {
		return 0
	}
	return p.Versions[len(p.Versions)-1].Version
}

// Version is one immutable version of a policy's rules.
type Version struct {
	ID       uuid.UUID
	PolicyID uuid.UUID
	Version  int
	Rules    Rules
	// RulesJSON is the rules' canonical JSON (RFC 8785) and RulesSHA256 its SHA-256.
	RulesJSON   []byte
	RulesSHA256 string
	Note        string
	CreatedAt   time.Time
}

// Snapshot is a compiled version: Content is what ContentSHA256 covers, ContentJSON its canonical JSON.
type Snapshot struct {
	ID              uuid.UUID
	OrganizationID  uuid.UUID
	PolicyID        uuid.UUID
	PolicyVersionID uuid.UUID
	Version         int
	ContentSHA256   string
	ContentJSON     []byte
	Content         Content
	Summary         Summary
	CreatedAt       time.Time
}

// Artifact is a generated set of files of a snapshot.
type Artifact struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	SnapshotID     uuid.UUID
	PolicyID       uuid.UUID
	Version        int
	Format         string
	// SHA256 is the SHA-256 of the sha256sum lines of Files (see ManifestSHA256).
	SHA256    string
	Files     []File
	CreatedAt time.Time
}

// File is one file of an artifact.
type File struct {
	Path      string `json:"path"`
	MediaType string `json:"media_type"`
	SHA256    string `json:"sha256"`
	Size      int    `json:"size"`
	// Content is not part of the artifact's row: files are stored by SHA256.
	Content []byte `json:"-"`
}

// Store keeps policies, versions, snapshots and artifacts (internal/store implements it). Reads scoped
// to an organization answer fault.ErrNotFound for another organization's rows.
type Store interface {
	// CreatePolicy stores p and, when first is not nil, its version 1; ErrPolicyNameExists when the
	// organization has a policy of this name.
	CreatePolicy(ctx context.Context, p Policy, first *Version) (Policy, error)
	// GetPolicy reads a policy with its versions.
	GetPolicy(ctx context.Context, organizationID, id uuid.UUID) (Policy, error)
	// AddVersion stores v as the policy's next version (its Version is set by the store).
	AddVersion(ctx context.Context, organizationID uuid.UUID, v Version) (Version, error)
	// GetVersion reads a version of a policy (0: the latest); ErrNoVersion when the policy has none,
	// ErrUnknownVersion when it has none of this number.
	GetVersion(ctx context.Context, organizationID, policyID uuid.UUID, version int) (Version, error)
	// PutSnapshot returns the snapshot already stored for s's version and content, or stores s unless
	// its organization stored limit snapshots or more since s.CreatedAt less window (a
	// *SnapshotLimitError then; limit 0: no cap).
	PutSnapshot(ctx context.Context, s Snapshot, limit int, window time.Duration) (Snapshot, error)
	// GetSnapshot reads a snapshot with its content.
	GetSnapshot(ctx context.Context, organizationID, id uuid.UUID) (Snapshot, error)
	// PutArtifact stores a and its files, or returns the artifact already stored for its snapshot and format.
	PutArtifact(ctx context.Context, a Artifact) (Artifact, error)
	// GetArtifact reads an artifact with its files' contents.
	GetArtifact(ctx context.Context, organizationID, id uuid.UUID) (Artifact, error)
}

// Intelligence reads what a compile decides on (internal/store implements it).
type Intelligence interface {
	// Servers returns every server at its current snapshot, sorted by Key.
	Servers(ctx context.Context) ([]ServerInput, error)
	// Audits returns the latest audits of each of urls (absent when a URL has none).
	Audits(ctx context.Context, urls []string) (map[string]AuditInput, error)
}

// ServerInput is one server as a compile sees it.
type ServerInput struct {
	// Key is "{namespace}/{name}".
	Key         string
	Version     string
	Status      string
	ContentHash string
	// ChangeRisk is the highest risk of the changes that produced the current snapshot ("" none).
	ChangeRisk string
	Remotes    []RemoteInput
	Packages   []PackageInput
}

// RemoteInput is a server's remote.
type RemoteInput struct {
	Type string
	URL  string
}

// PackageInput is a server's package.
type PackageInput struct {
	RegistryType string
	Identifier   string
	Version      string
	Transport    string
}

// AuditInput is what the latest audits of a URL say.
type AuditInput struct {
	// Verdict is the latest conformance audit's ("" when none); Score the latest readiness audit's.
	Verdict string
	Score   *int
	// Tools is the tool surface of the newest audit that listed one; Listed tells whether any did.
	Listed bool
	Tools  []ToolInput
}

// ToolInput is one tool of an audit's surface (internal/audit/surface.ToolDigest).
type ToolInput struct {
	Name               string         `json:"name"`
	Annotations        map[string]any `json:"annotations"`
	DescriptionSHA256  string         `json:"description_sha256"`
	InputSchemaSHA256  string         `json:"input_schema_sha256"`
	OutputSchemaSHA256 string         `json:"output_schema_sha256"`
	AnnotationsSHA256  string         `json:"annotations_sha256"`
}
