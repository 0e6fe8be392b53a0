// Package ingest holds the ingestion service's use cases: registering sources, running discovery (fetch,
// archive, normalise, extract, verify, score, ledger) and scheduling it. It declares the storage,
// archive and fetch interfaces it needs; transport and SQL live elsewhere.
package ingest

import (
	"time"

	"github.com/google/uuid"
)

// Source health states.
const (
	HealthNew            = "NEW"
	HealthHealthy        = "HEALTHY"
	HealthDegraded       = "DEGRADED"
	HealthReviewRequired = "REVIEW_REQUIRED"
)

// Adapters.
const (
	AdapterLiteralURL = "literal_url"
	AdapterIndexPage  = "index_page"
)

// Source is a registered document publisher.
type Source struct {
	ID                  uuid.UUID
	Organization        string
	Program             string
	Jurisdiction        string
	AllowedHosts        []string
	Adapter             string
	AdapterConfig       map[string]any
	CadenceSeconds      int
	TermsReviewState    string
	Enabled             bool
	HealthStatus        string
	LastError           string
	ConsecutiveFailures int
	LastRunAt           *time.Time
	NextRunAt           time.Time
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// Run is one discovery attempt.
type Run struct {
	ID         uuid.UUID
	SourceID   uuid.UUID
	Trigger    string
	Status     string
	StartedAt  time.Time
	FinishedAt *time.Time
	ErrorKind  string
	Error      string
	Resources  []Resource
}

// Run statuses and triggers.
const (
	RunRunning   = "RUNNING"
	RunSucceeded = "SUCCEEDED"
	RunFailed    = "FAILED"

	TriggerManual    = "manual"
	TriggerScheduled = "scheduled"
)

// Resource is what a run did with one discovered document.
type Resource struct {
	URL             string    `json:"url"`
	PolicyID        uuid.UUID `json:"policy_id"`
	ObservationID   uuid.UUID `json:"observation_id"`
	DocumentAssetID uuid.UUID `json:"document_asset_id"`
	NewAsset        bool      `json:"new_asset"`
	NewVersion      bool      `json:"new_version"`
	Facts           int       `json:"facts"`
	Error           string    `json:"error,omitempty"`
}

// SourceStatus is a source's health with its latest run.
type SourceStatus struct {
	Source  Source
	LastRun *Run
}

// Asset is an archived document, addressed by the SHA-256 of its bytes.
type Asset struct {
	ID        uuid.UUID
	RawSHA256 string
	Size      int64
	MediaType string
	BlobKey   string
}

// Observation is one fetch with its HTTP metadata.
type Observation struct {
	ID              uuid.UUID
	PolicyID        uuid.UUID
	RunID           uuid.UUID
	DocumentAssetID uuid.UUID // zero when the fetch failed
	URL             string
	FinalURL        string
	HTTPStatus      int
	Headers         map[string][]string
	RedirectChain   []string
	TimingsMS       map[string]float64
	Attempts        int
	Size            int64
	RawSHA256       string
	MediaType       string
	ErrorKind       string
	Error           string
	FetchedAt       time.Time
}

// Version is one normalised version of a policy document.
type Version struct {
	ID                   uuid.UUID
	PolicyID             uuid.UUID
	Number               int
	Asset                Asset
	CanonicalContentHash string
	CanonicalText        string
	Sections             []VersionSection
	CreatedAt            time.Time
}

// VersionSection locates one section of a version's canonical text.
type VersionSection struct {
	Heading string `json:"heading"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
}

// Fact is an extracted fact with its outcome.
type Fact struct {
	ID                uuid.UUID
	PolicyID          uuid.UUID
	VersionID         uuid.UUID
	PreviousVersionID uuid.UUID
	ChangeType        string
	Summary           string
	AffectedCodes     []string
	EvidenceQuote     string
	EvidenceSide      string
	Section           string
	Status            string
	Evidence          *EvidenceSpan
	Event             ChangeEvent
}

// Fact statuses.
const (
	FactVerified             = "VERIFIED"
	FactNoVerifiableEvidence = "NO_VERIFIABLE_EVIDENCE"
)

// EvidenceSpan proves a verified fact's quote, traced to the archived asset.
type EvidenceSpan struct {
	ID                   uuid.UUID
	DocumentAssetID      uuid.UUID
	RawSHA256            string
	CanonicalContentHash string
	SourceURL            string
	Section              string
	VersionID            uuid.UUID
	Quote                string
	Side                 string
}

// ChangeEvent is the ledger row of one fact.
type ChangeEvent struct {
	ID                   uuid.UUID
	FactID               uuid.UUID
	PolicyID             uuid.UUID
	SourceID             uuid.UUID
	ChangeType           string
	Status               string
	Confidence           float64
	Components           map[string]float64
	AutoPublishThreshold float64
	ReviewThreshold      float64
	ThresholdScope       string
	CreatedAt            time.Time
}

// Policy is one tracked document of a source.
type Policy struct {
	ID          uuid.UUID
	SourceID    uuid.UUID
	URL         string
	FirstSeenAt time.Time
	LastSeenAt  time.Time
	Versions    []Version
	Facts       []Fact
}

// Page asks for one page of a list.
type Page struct {
	Limit  int
	Cursor string
}
