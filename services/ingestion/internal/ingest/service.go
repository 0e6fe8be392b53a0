package ingest

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
)

// Store is the persistence the use cases need. Methods return ErrNotFound for a missing row.
type Store interface {
	CreateSource(ctx context.Context, src Source) (Source, error)
	GetSource(ctx context.Context, id uuid.UUID) (Source, error)
	ListSources(ctx context.Context, p Page) ([]Source, string, error)
	SourceStatus(ctx context.Context, id uuid.UUID) (SourceStatus, error)
	// DueSources claims enabled, approved sources whose next run time has passed, oldest due first:
	// a source it returns is returned to no other caller until its run sets its next run time (or a
	// lease of its own ends, should the run never finish).
	DueSources(ctx context.Context, limit int) ([]uuid.UUID, error)
	// WithSourceLock runs fn holding the source's discovery lock, which spans replicas; it returns
	// ErrRunInProgress without calling fn when another run holds the lock.
	WithSourceLock(ctx context.Context, id uuid.UUID, fn func(context.Context) error) error
	// FinishRun records a finished run, the observation of every fetch it made, the policies it saw
	// and the source's new health, in one transaction.
	FinishRun(ctx context.Context, run Run, observations []Observation, health HealthUpdate) error
	// EnsurePolicy returns the id of the source's policy at url, creating it on first sight.
	EnsurePolicy(ctx context.Context, sourceID uuid.UUID, url string) (uuid.UUID, error)
	AssetBySHA(ctx context.Context, sha string) (Asset, bool, error)
	// InsertAsset stores the asset row unless one with the same hash exists, and returns the stored
	// row and whether this call created it.
	InsertAsset(ctx context.Context, a Asset) (Asset, bool, error)
	// CurrentVersion returns the policy's latest version without its canonical text and sections
	// (which most fetches, unchanged, never need), or nil before the first.
	CurrentVersion(ctx context.Context, policyID uuid.UUID) (*Version, error)
	// VersionContent returns a version's canonical text and sections.
	VersionContent(ctx context.Context, versionID uuid.UUID) (string, []VersionSection, error)
	// ThresholdRules returns the stored threshold rows that apply to the source: its own and the
	// shared ones.
	ThresholdRules(ctx context.Context, sourceID uuid.UUID) ([]confidence.Rule, error)
	// RecordVersion writes a new version with its facts, evidence spans and change events, and the
	// outbox rows of rec.Published, in one transaction.
	RecordVersion(ctx context.Context, rec VersionRecord) error
	ListChangeEvents(ctx context.Context, status string, p Page) ([]ChangeEvent, string, error)
	GetPolicy(ctx context.Context, id uuid.UUID) (Policy, error)
}

// HealthUpdate is a source's health after a run.
type HealthUpdate struct {
	Status              string
	LastError           string
	ConsecutiveFailures int
	NextRunAt           time.Time
}

// VersionRecord is everything one new version writes.
type VersionRecord struct {
	Source  Source
	Version Version
	Facts   []Fact
	// Published are the messages of the facts whose change event reached AUTO_PUBLISHED, queued to
	// the outbox with them.
	Published []outbox.Event
}

// PolicyChangeEncoder encodes the message of a published change event: its subject and payload
// belong to the service's event contract (internal/events), not to the use cases.
type PolicyChangeEncoder func(src Source, f Fact, publishedAt time.Time) (outbox.Event, error)

// Archive stores documents by content hash and never overwrites one.
type Archive interface {
	// Put stores r under the hash unless an object with that key exists, and returns the key.
	Put(ctx context.Context, sha256Hex string, r io.Reader, mediaType string) (string, error)
}

// Limits are the fetch caps (README "Configuration").
type Limits struct {
	MaxBytes     int64
	Timeout      time.Duration
	MaxAttempts  int
	MaxRedirects int
}

// Service runs the ingestion use cases.
type Service struct {
	store        Store
	archive      Archive
	encode       PolicyChangeEncoder
	log          *slog.Logger
	allowPrivate []netip.Prefix
	limits       Limits
	guard        *safehttp.Client
	now          func() time.Time
	lookup       safehttp.Option
}

// Option configures a Service.
type Option func(*Service)

// WithClock replaces time.Now (tests).
func WithClock(now func() time.Time) Option { return func(s *Service) { s.now = now } }

// WithFetchOption passes an option to every fetch client (tests inject a DNS lookup).
func WithFetchOption(o safehttp.Option) Option { return func(s *Service) { s.lookup = o } }

// NewService returns the ingestion use cases. encode gives the message of each change event they
// publish; allowPrivate lists the private CIDRs an operator allows for on-premises document servers
// (default none).
func NewService(store Store, archive Archive, encode PolicyChangeEncoder, log *slog.Logger, allowPrivate []netip.Prefix, limits Limits, opts ...Option) *Service {
	s := &Service{store: store, archive: archive, encode: encode, log: log, allowPrivate: allowPrivate, limits: limits, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	s.guard = safehttp.New(safehttp.Policy{AllowPrivate: allowPrivate}, s.fetchOptions()...)
	return s
}

func (s *Service) fetchOptions() []safehttp.Option {
	if s.lookup == nil {
		return nil
	}
	return []safehttp.Option{s.lookup}
}

// documentMIME are the media types a policy document may have.
var documentMIME = []string{"text/html", "application/pdf", "text/plain"}

// client returns the fetch client of one source: its allowlist, the operator's private exceptions and
// the service's caps.
func (s *Service) client(src Source, mime []string) *safehttp.Client {
	return safehttp.New(safehttp.Policy{
		AllowedHosts: src.AllowedHosts,
		AllowPrivate: s.allowPrivate,
		MaxBytes:     s.limits.MaxBytes,
		Timeout:      s.limits.Timeout,
		MaxAttempts:  s.limits.MaxAttempts,
		MaxRedirects: s.limits.MaxRedirects,
		AllowedMIME:  mime,
	}, s.fetchOptions()...)
}
