package feeds_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// rows is a fixed data source, standing in for the registry tables.
type rows map[string][]map[string]any

func (r rows) Rows(_ context.Context, dataset string, yield func(map[string]any) error) error {
	for _, row := range r[dataset] {
		if err := yield(row); err != nil {
			return err
		}
	}
	return nil
}

var fixture = rows{
	"servers": {
		{"namespace": "io.example", "name": "weather", "version": "1.2.0", "status": "active", "description": "Weather, with \"quotes\", and commas"},
		{"namespace": "io.example", "name": "files", "version": "0.3.1", "status": "deprecated"},
	},
	"changes": {{"id": "c1", "namespace": "io.example", "name": "weather", "change_type": "remote_url_changed", "risk": "high"}},
}

func TestExportWritesImmutableVerifiableArtifacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	blobs, err := blobstore.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewFeeds(pool)
	exp := feeds.NewExporter(fixture, st, blobs, slog.New(slog.DiscardHandler))
	arts, err := exp.ExportAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 4 {
		t.Fatalf("artifacts: got %d, want 2 datasets x 2 formats", len(arts))
	}
	for _, a := range arts {
		r, err := blobs.Open(ctx, a.BlobKey)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r)
		r.Close()
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != a.SHA256 || int64(len(body)) != a.Size {
			t.Errorf("%s %s: recorded hash or size does not match the content", a.Dataset, a.Format)
		}
		want := int64(len(fixture[a.Dataset]))
		switch a.Format {
		case feeds.FormatJSONL:
			n := int64(0)
			sc := bufio.NewScanner(strings.NewReader(string(body)))
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Errorf("jsonl line %q: %v", sc.Text(), err)
				}
				n++
			}
			if n != want || a.Rows != want {
				t.Errorf("%s jsonl: %d lines, %d recorded rows, want %d", a.Dataset, n, a.Rows, want)
			}
		case feeds.FormatCSV:
			recs, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
			if err != nil || int64(len(recs)) != want+1 || a.Rows != want {
				t.Errorf("%s csv: %d records (%v), %d recorded rows, want header + %d", a.Dataset, len(recs), err, a.Rows, want)
			}
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE feed_artifacts SET rows = 0`); err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("artifact rows are not protected: %v", err)
	}
}

func TestListPagesWithTheBeforeCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	blobs, err := blobstore.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewFeeds(pool)
	exp := feeds.NewExporter(fixture, st, blobs, slog.New(slog.DiscardHandler))
	for range 3 {
		if _, err := exp.ExportAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	svc := feeds.NewService(st, feeds.NewSigner("test-secret-0123456789"))
	var seen []string
	q := feeds.Query{Dataset: "servers", Limit: 4}
	for page := 0; ; page++ {
		arts, next, err := svc.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range arts {
			seen = append(seen, a.ID.String())
			if i > 0 && !a.CreatedAt.Before(arts[i-1].CreatedAt) {
				t.Errorf("page %d is not newest first", page)
			}
		}
		if next == nil {
			break
		}
		q.Before = next
	}
	if len(seen) != 6 {
		t.Errorf("pages held %d artifacts, want all 6 exactly once", len(seen))
	}
	jsonl, _, err := svc.List(ctx, feeds.Query{Dataset: "servers", Format: "jsonl", Limit: 100})
	if err != nil || len(jsonl) != 3 {
		t.Errorf("format filter: got %d (%v), want 3", len(jsonl), err)
	}
	if _, _, err := svc.List(ctx, feeds.Query{Dataset: "nope", Limit: 1}); err != fault.ErrNotFound {
		t.Errorf("unknown dataset: got %v", err)
	}
}

func TestSignedURLs(t *testing.T) {
	t.Parallel()
	s := feeds.NewSigner("secret-a-0123456789")
	id := [16]byte{1}
	path, exp := s.Sign(id)
	if time.Until(exp) > feeds.URLLifetime || time.Until(exp) < feeds.URLLifetime-2*time.Second {
		t.Errorf("expiry %v", exp)
	}
	u, err := url.Parse(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verify(id, u.Query()); err != nil {
		t.Fatalf("a fresh URL: %v", err)
	}
	if err := feeds.NewSigner("secret-b-0123456789").Verify(id, u.Query()); err == nil {
		t.Error("a URL signed with another key was accepted")
	}
	if err := s.Verify([16]byte{2}, u.Query()); err == nil {
		t.Error("a URL was accepted for another artifact")
	}
	q := u.Query()
	q.Set("expires", "4102444800") // extending the expiry breaks the signature
	if err := s.Verify(id, q); err == nil {
		t.Error("an altered expiry was accepted")
	}
	q = u.Query()
	q.Set("expires", "1")
	q.Set("signature", "00")
	if err := s.Verify(id, q); err == nil {
		t.Error("an expired URL was accepted")
	}
}

// TestPeriodicExportSkipsARecentExport: the periodic export of a replica does nothing while the
// newest artifact is younger than its minimum age (another replica's export of this interval), and
// exports once it is older.
func TestPeriodicExportSkipsARecentExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	blobs, err := blobstore.Open(ctx, "file://"+t.TempDir()+"?create_dir=1")
	if err != nil {
		t.Fatal(err)
	}
	exp := feeds.NewExporter(fixture, store.NewFeeds(pool), blobs, slog.New(slog.DiscardHandler))
	if arts, err := exp.ExportIfOlder(ctx, time.Hour, time.Now); err != nil || len(arts) != 4 {
		t.Fatalf("first export: %d artifacts, %v; want 4", len(arts), err)
	}
	if arts, err := exp.ExportIfOlder(ctx, time.Hour, time.Now); err != nil || len(arts) != 0 {
		t.Fatalf("export within the hour: %d artifacts, %v; want none", len(arts), err)
	}
	later := func() time.Time { return time.Now().Add(61 * time.Minute) }
	if arts, err := exp.ExportIfOlder(ctx, time.Hour, later); err != nil || len(arts) != 4 {
		t.Fatalf("export an hour later: %d artifacts, %v; want 4", len(arts), err)
	}
}
