// Package feeds exports registry intelligence as immutable data-feed artifacts (JSON Lines and CSV,
// each with its SHA-256 and row count) into the blob store, lists them, and signs short-lived download
// URLs that the service itself serves.
package feeds

import (
	"context"
	"io"
	"time"

	"github.com/google/uuid"
)

// Formats of an artifact.
const (
	FormatJSONL = "jsonl"
	FormatCSV   = "csv"
)

// Dataset is one exported table.
type Dataset struct {
	Name        string
	Description string
	// Columns are the fields of each row, in CSV column order.
	Columns []string
}

// Datasets are the exported tables.
var Datasets = []Dataset{
	{Name: "servers", Description: "Current state of every registry server, one row per server.",
		Columns: []string{"namespace", "name", "version", "status", "description", "repository_url", "first_seen_at", "updated_at"}},
	{Name: "changes", Description: "Every classified change of a registry server, oldest first.",
		Columns: []string{"id", "namespace", "name", "from_version", "to_version", "change_type", "risk", "field", "old_value", "new_value", "detected_at"}},
}

// DatasetNamed returns the dataset with this name.
func DatasetNamed(name string) (Dataset, bool) {
	for _, d := range Datasets {
		if d.Name == name {
			return d, true
		}
	}
	return Dataset{}, false
}

// Artifact is one immutable export.
type Artifact struct {
	ID        uuid.UUID
	Dataset   string
	Format    string
	SHA256    string
	Size      int64
	Rows      int64
	BlobKey   string
	CreatedAt time.Time
}

// Source streams a dataset's rows (column name to value) to yield, which may stop it with an error.
type Source interface {
	Rows(ctx context.Context, dataset string, yield func(map[string]any) error) error
}

// Store persists artifact records.
type Store interface {
	InsertArtifacts(ctx context.Context, a []Artifact) error
	ListArtifacts(ctx context.Context, q Query) ([]Artifact, error)
	GetArtifact(ctx context.Context, dataset string, id uuid.UUID) (Artifact, error)
	ArtifactByID(ctx context.Context, id uuid.UUID) (Artifact, error)
	// Catalog returns, per dataset, the number of artifacts and the newest one's time.
	Catalog(ctx context.Context) (map[string]CatalogEntry, error)
	// WithExportLock runs fn when no other replica is exporting, and reports whether it ran.
	WithExportLock(ctx context.Context, fn func(context.Context) error) (bool, error)
}

// CatalogEntry is what the catalog says of one dataset's artifacts.
type CatalogEntry struct {
	Count  int64
	Latest *time.Time
}

// Query selects artifacts of a dataset, newest first.
type Query struct {
	Dataset string
	Format  string
	Since   *time.Time
	Until   *time.Time
	Before  *time.Time
	Limit   int
}

// Blobs is where artifact contents live.
type Blobs interface {
	PutOnce(ctx context.Context, key string, r io.Reader, contentType string) error
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// ContentType is the media type a format is served with.
func ContentType(format string) string {
	if format == FormatCSV {
		return "text/csv; charset=utf-8"
	}
	return "application/x-ndjson"
}
