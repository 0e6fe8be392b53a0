// Package intelligence is registry intelligence (README, "Registry intelligence"): it syncs MCP
// registries into an immutable history of server snapshots, classifies each change between
// consecutive snapshots by a rule table (rules.go), and answers the reads of the intelligence routes
// (current state, history, diffs, change feeds, batch compare). It declares the store and registry
// interfaces it needs and imports no proto, HTTP or gRPC types.
package intelligence

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ServerKey addresses a server: the server.json name "<namespace>/<name>".
type ServerKey struct {
	Namespace string
	Name      string
}

// String returns the server.json name.
func (k ServerKey) String() string { return k.Namespace + "/" + k.Name }

// Server is a server.json document: the fields the rules read, and the document itself.
type Server struct {
	Key         ServerKey
	Version     string
	Title       string
	Description string
	WebsiteURL  string
	// Repository is nil when the document declares none.
	Repository *Repository
	Packages   []Package
	Remotes    []Transport
	// JSON is the canonical form of the document (keys sorted, no insignificant space): what is stored
	// and hashed.
	JSON json.RawMessage
	// Other holds the canonical JSON of each top-level member the rules do not read field by field
	// (icons, _meta, ...), so that any edit to them is still reported.
	Other map[string]string
}

// Repository is server.json's repository.
type Repository struct {
	URL       string
	Source    string
	ID        string
	Subfolder string
}

// Package is one installable package.
type Package struct {
	RegistryType    string
	RegistryBaseURL string
	Identifier      string
	Version         string
	FileSHA256      string
	RuntimeHint     string
	Transport       Transport
	// RuntimeArguments and PackageArguments are the canonical JSON of the argument lists ("" when absent).
	RuntimeArguments     string
	PackageArguments     string
	EnvironmentVariables []Input
}

// Transport is a package's transport or a remote: type (stdio, streamable-http, sse), URL and headers.
type Transport struct {
	Type    string
	URL     string
	Headers []Input
}

// Input is an environment variable or header a client supplies.
type Input struct {
	Name        string
	Description string
	IsRequired  bool
	IsSecret    bool
	Format      string
	Default     string
	Value       string
}

// Registry lifecycle statuses (the official registry's _meta status).
const (
	LifecycleActive     = "active"
	LifecycleDeprecated = "deprecated"
	LifecycleDeleted    = "deleted"
)

// Observation is one listing item of a registry: a server version with the registry's metadata.
type Observation struct {
	Server        Server
	Status        string
	StatusMessage string
	IsLatest      bool
	// PublishedAt and UpdatedAt are zero when the registry gave none.
	PublishedAt time.Time
	UpdatedAt   time.Time
}

// Snapshot is one immutable history entry: an observed (server, version, status, content).
type Snapshot struct {
	ID       uuid.UUID
	ServerID uuid.UUID
	// PreviousID is the snapshot of the same version this one follows; uuid.Nil for a version's first.
	PreviousID    uuid.UUID
	Registry      string
	Server        Server
	Status        string
	StatusMessage string
	IsLatest      bool
	ContentHash   string
	PublishedAt   time.Time
	UpdatedAt     time.Time
	ObservedAt    time.Time
}

// Risk is a change's risk level.
type Risk string

// The risk levels, highest first.
const (
	RiskHigh   Risk = "high"
	RiskMedium Risk = "medium"
	RiskLow    Risk = "low"
)

func (r Risk) rank() int {
	switch r {
	case RiskHigh:
		return 3
	case RiskMedium:
		return 2
	case RiskLow:
		return 1
	}
	return 0
}

// HighestRisk returns the highest risk among changes, "" when there are none.
func HighestRisk(changes []FieldChange) Risk {
	var top Risk
	for _, c := range changes {
		if c.Risk.rank() > top.rank() {
			top = c.Risk
		}
	}
	return top
}

// FieldChange is one field that differs between two snapshots, classified by the rule table.
type FieldChange struct {
	// Field is the server.json path, e.g. "remotes[0].url" or "packages[1].environmentVariables.API_KEY".
	Field   string
	Old     string
	New     string
	Type    ChangeType
	Risk    Risk
	Summary string
}

// Change is a recorded FieldChange between two consecutive snapshots of a server.
type Change struct {
	FieldChange
	ID             uuid.UUID
	ServerID       uuid.UUID
	Key            ServerKey
	FromSnapshotID uuid.UUID
	ToSnapshotID   uuid.UUID
	FromVersion    string
	ToVersion      string
	DetectedAt     time.Time
	// RemoteURL, FromObservationID and ToObservationID are set on a tool-surface change (the remote
	// whose surface changed, and its two observations); FromSnapshotID and ToSnapshotID are then both
	// the server's current snapshot. Empty on a listing change.
	RemoteURL         string
	FromObservationID uuid.UUID
	ToObservationID   uuid.UUID
}

// ServerState is a server's current state.
type ServerState struct {
	ID      uuid.UUID
	Key     ServerKey
	Current Snapshot
	// LatestChange is nil until a change is detected.
	LatestChange        *Change
	ChangeCount         int64
	HighRiskChangeCount int64
	FirstSeenAt         time.Time
	LastSeenAt          time.Time
}

// ServerHead is a server's own row: the ids of its current snapshot and latest change, and the
// counters and times that move while the snapshot stays the same. With the snapshot and the change
// (both immutable) it makes the ServerState.
type ServerHead struct {
	ID                uuid.UUID
	Key               ServerKey
	CurrentSnapshotID uuid.UUID
	// LatestChangeID is uuid.Nil until a change is detected.
	LatestChangeID      uuid.UUID
	ChangeCount         int64
	HighRiskChangeCount int64
	FirstSeenAt         time.Time
	LastSeenAt          time.Time
}
