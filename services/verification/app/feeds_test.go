package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

func TestDataFeeds(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, key := s.newKey("Feeds")
	auth := bearer(key)

	if r := s.Do("GET", "/v1/intelligence/data", nil, nil); r.Status != 401 {
		t.Errorf("catalog without bearer: got %d, want 401", r.Status)
	}
	catalog := s.Do("GET", "/v1/intelligence/data", nil, auth).Object(t)
	if ds := catalog["datasets"].([]any); len(ds) != 2 || ds[0].(map[string]any)["artifact_count"] != "0" {
		t.Fatalf("catalog before any export: %v", catalog)
	}

	ctx := context.Background()
	blobs, err := blobstore.Open(ctx, s.blobURL)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	exp := feeds.NewExporter(staticRows{"servers": {{"namespace": "io.example", "name": "weather", "version": "1.0.0"}}},
		store.NewFeeds(s.Pool), blobs, slog.New(slog.DiscardHandler))
	for range 2 {
		if _, err := exp.ExportAll(ctx); err != nil {
			t.Fatal(err)
		}
	}

	for _, q := range []string{"limit=0", "limit=101", "before=not-a-date", "since=yesterday", "format=xml"} {
		if r := s.Do("GET", "/v1/intelligence/data/servers/artifacts?"+q, nil, auth); r.Status != 422 {
			t.Errorf("artifacts?%s: got %d %s, want 422", q, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/v1/intelligence/data/nothing/artifacts", nil, auth); r.Status != 404 {
		t.Errorf("unknown dataset: got %d, want 404", r.Status)
	}
	page := s.Do("GET", "/v1/intelligence/data/servers/artifacts?limit=3", nil, auth).Object(t)
	items := page["items"].([]any)
	before, _ := page["next_before"].(string)
	if len(items) != 3 || before == "" {
		t.Fatalf("first page: %v", page)
	}
	rest := s.Do("GET", "/v1/intelligence/data/servers/artifacts?limit=3&before="+before, nil, auth).Object(t)
	if len(rest["items"].([]any)) != 1 || rest["next_before"] != nil {
		t.Errorf("second page: %v, want the last artifact and no cursor", rest)
	}

	art := items[0].(map[string]any)
	path := "/v1/intelligence/data/servers/artifacts/" + art["id"].(string) + "/download"
	if r := s.Do("POST", path, nil, nil); r.Status != 401 {
		t.Errorf("download without bearer: got %d, want 401", r.Status)
	}
	dl := s.Do("POST", path, nil, auth)
	link, _ := dl.Object(t)["url"].(string)
	if dl.Status != 200 || !strings.HasPrefix(link, s.URL+feeds.FilePath) || dl.Object(t)["expires_at"] == nil {
		t.Fatalf("download: %d %s", dl.Status, dl.Body)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(body)
	if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != art["sha256"] || !strings.Contains(string(body), "weather") {
		t.Errorf("signed URL: %d, %d bytes, hash mismatch or wrong content", resp.StatusCode, len(body))
	}
	if resp, err := http.Get(strings.Replace(link, "signature=", "signature=00", 1)); err != nil || resp.StatusCode != 403 {
		t.Errorf("tampered URL: got %v %v, want 403", resp.StatusCode, err)
	}
	for _, p := range []string{
		"/v1/intelligence/data/servers/artifacts/0190a0b0-0000-7000-8000-000000000000/download",
		"/v1/intelligence/data/servers/artifacts/not-a-uuid/download",
		"/v1/intelligence/data/changes/artifacts/" + art["id"].(string) + "/download",
	} {
		if r := s.Do("POST", p, nil, auth); r.Status != 404 {
			t.Errorf("POST %s: got %d, want 404", p, r.Status)
		}
	}
	catalog = s.Do("GET", "/v1/intelligence/data", nil, auth).Object(t)
	if n := catalog["datasets"].([]any)[0].(map[string]any)["artifact_count"]; n != "4" {
		t.Errorf("catalog after two exports: servers has %v artifacts, want 4", n)
	}
}

// staticRows stands in for the registry tables, which another test drives through a registry sync.
type staticRows map[string][]map[string]any

func (r staticRows) Rows(_ context.Context, dataset string, yield func(map[string]any) error) error {
	for _, row := range r[dataset] {
		if err := yield(row); err != nil {
			return err
		}
	}
	return nil
}
