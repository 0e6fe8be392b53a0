package feeds

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/periodic"
)

// Exporter writes a new artifact of every dataset in every format.
type Exporter struct {
	source Source
	store  Store
	blobs  Blobs
	log    *slog.Logger
	now    func() time.Time
}

// NewExporter returns an exporter.
func NewExporter(source Source, store Store, blobs Blobs, log *slog.Logger) *Exporter {
	return &Exporter{source: source, store: store, blobs: blobs, log: log, now: time.Now}
}

// Run exports every interval until ctx ends. At each tick of each replica, the replica that holds
// the export lock exports unless the newest artifact is younger than nine tenths of the interval:
// N replicas whose ticks fall apart export once per interval, not N times, and when the replica
// that exported stops, another one's next tick takes over.
func (e *Exporter) Run(ctx context.Context, every time.Duration) error {
	return periodic.Run(ctx, every, func(ctx context.Context) {
		if _, err := e.exportAll(ctx, every-every/10); err != nil && ctx.Err() == nil {
			e.log.ErrorContext(ctx, "data feed export failed", "error", err)
		}
	})
}

// ExportAll exports every dataset, unless another replica is exporting, and returns the artifacts.
func (e *Exporter) ExportAll(ctx context.Context) ([]Artifact, error) { return e.exportAll(ctx, 0) }

// exportAll exports every dataset under the export lock, unless the newest artifact is younger than
// minAge.
func (e *Exporter) exportAll(ctx context.Context, minAge time.Duration) ([]Artifact, error) {
	var out []Artifact
	_, err := e.store.WithExportLock(ctx, func(ctx context.Context) error {
		if minAge > 0 {
			catalog, err := e.store.Catalog(ctx)
			if err != nil {
				return err
			}
			for _, c := range catalog {
				if c.Latest != nil && e.now().Sub(*c.Latest) < minAge {
					return nil
				}
			}
		}
		for _, d := range Datasets {
			arts, err := e.export(ctx, d)
			if err != nil {
				return fmt.Errorf("export %s: %w", d.Name, err)
			}
			out = append(out, arts...)
		}
		return nil
	})
	return out, err
}

// encoder writes one format of a dataset to a temporary file while hashing it.
type encoder struct {
	format string
	file   *os.File
	hash   hash.Hash
	w      io.Writer
	csv    *csv.Writer
	json   *json.Encoder
	rows   int64
}

func newEncoder(format string) (*encoder, error) {
	f, err := os.CreateTemp("", "feed-*")
	if err != nil {
		return nil, err
	}
	e := &encoder{format: format, file: f, hash: sha256.New()}
	e.w = io.MultiWriter(f, e.hash)
	if format == FormatCSV {
		e.csv = csv.NewWriter(e.w)
	} else {
		e.json = json.NewEncoder(e.w)
		e.json.SetEscapeHTML(false)
	}
	return e, nil
}

func (e *encoder) write(d Dataset, row map[string]any) error {
	e.rows++
	if e.json != nil {
		return e.json.Encode(row)
	}
	rec := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		if v, ok := row[c]; ok && v != nil {
			rec[i] = fmt.Sprint(v)
		}
	}
	return e.csv.Write(rec)
}

func (e *encoder) close() { _ = e.file.Close(); _ = os.Remove(e.file.Name()) }

// export writes both formats of one dataset in a single pass over its rows.
func (e *Exporter) export(ctx context.Context, d Dataset) ([]Artifact, error) {
	encs := make([]*encoder, 0, 2)
	defer func() {
		for _, enc := range encs {
			enc.close()
		}
	}()
	for _, f := range []string{FormatJSONL, FormatCSV} {
		enc, err := newEncoder(f)
		if err != nil {
			return nil, err
		}
		encs = append(encs, enc)
	}
	if err := encs[1].csv.Write(d.Columns); err != nil {
		return nil, err
	}
	err := e.source.Rows(ctx, d.Name, func(row map[string]any) error {
		for _, enc := range encs {
			if err := enc.write(d, row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Unique per dataset (the listing's keyset), even for the two formats of one export.
	created := e.now().UTC().Truncate(time.Microsecond)
	arts := make([]Artifact, 0, len(encs))
	for i, enc := range encs {
		if enc.csv != nil {
			enc.csv.Flush()
			if err := enc.csv.Error(); err != nil {
				return nil, err
			}
		}
		size, err := enc.file.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		if _, err := enc.file.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		a := Artifact{
			ID: uuid.Must(uuid.NewV7()), Dataset: d.Name, Format: enc.format, SHA256: hex.EncodeToString(enc.hash.Sum(nil)),
			Size: size, Rows: enc.rows, CreatedAt: created.Add(time.Duration(i) * time.Microsecond),
		}
		a.BlobKey = "feeds/" + d.Name + "/" + a.ID.String() + "." + enc.format
		if err := e.blobs.PutOnce(ctx, a.BlobKey, enc.file, ContentType(enc.format)); err != nil {
			return nil, err
		}
		arts = append(arts, a)
	}
	if err := e.store.InsertArtifacts(ctx, arts); err != nil {
		return nil, err
	}
	e.log.InfoContext(ctx, "data feed exported", "dataset", d.Name, "rows", encs[0].rows)
	return arts, nil
}
