package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/blobstore"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// TestRegistrySyncFeedsReadsAndDataFeeds runs the whole intelligence path in one service: a registry
// sync, the bearer-protected reads, and a data-feed export of the synced tables.
func TestRegistrySyncFeedsReadsAndDataFeeds(t *testing.T) {
	t.Parallel()
	reg := registryfixture.New(t)
	reg.Publish(registryfixture.Server("io.example/weather", "1.0.0"))
	reg.Publish(registryfixture.Server("io.example/files", "0.1.0"))
	s := startService(t, map[string]string{
		"VERIFICATION_REGISTRY_URLS":          reg.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "1s",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":    "127.0.0.0/8",
	})
	_, key := s.newKey("Intel")
	auth := bearer(key)

	if r := s.Do("GET", "/v1/intelligence/servers/io.example/weather", nil, nil); r.Status != 401 {
		t.Errorf("server read without bearer: got %d, want 401", r.Status)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Do("GET", "/v1/intelligence/servers/io.example/weather", nil, auth)
		if r.Status == 200 {
			if got := r.Object(t)["version"]; got != "1.0.0" {
				t.Fatalf("server state: version %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry sync never stored the server: %d %s", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r := s.Do("GET", "/v1/intelligence/servers/io.example/nothing-here", nil, auth); r.Status != 404 {
		t.Errorf("unknown server: got %d, want 404", r.Status)
	}

	ctx := context.Background()
	blobs, err := blobstore.Open(ctx, s.blobURL)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	arts, err := feeds.NewExporter(store.NewFeedSource(s.Pool), store.NewFeeds(s.Pool), blobs, slog.New(slog.DiscardHandler)).ExportAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arts {
		if a.Dataset != "servers" || a.Format != feeds.FormatJSONL {
			continue
		}
		r, err := blobs.Open(ctx, a.BlobKey)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r)
		r.Close()
		names := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		for sc.Scan() {
			var row map[string]any
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatal(err)
			}
			names[row["namespace"].(string)+"/"+row["name"].(string)] = row["version"].(string)
		}
		if a.Rows != 2 || names["io.example/weather"] != "1.0.0" || names["io.example/files"] != "0.1.0" {
			t.Errorf("servers feed: %d rows %v", a.Rows, names)
		}
		return
	}
	t.Fatal("no servers JSON Lines artifact was exported")
}
