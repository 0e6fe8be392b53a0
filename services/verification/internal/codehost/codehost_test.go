package codehost_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/codehost"
	"github.com/trustlayer/trustlayer/services/verification/internal/codehost/codehosttest"
)

func client(t *testing.T, url string, key *rsa.PrivateKey) *codehost.Client {
	t.Helper()
	c, err := codehost.New(codehost.Config{APIURL: url, AppID: codehosttest.AppID, PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func repos(n int) []codehosttest.Repo {
	out := make([]codehosttest.Repo, n)
	for i := range out {
		out[i] = codehosttest.Repo{ID: int64(i + 1), FullName: fmt.Sprintf("acme/r%04d", i), DefaultBranch: "main"}
	}
	return out
}

func TestInstallation(t *testing.T) {
	t.Parallel()
	fake := codehosttest.New(t)
	fake.AddInstallation(7, "acme")
	fake.AddInstallation(8, "frozen")
	fake.Suspend(8)
	c := client(t, fake.URL, fake.Key)
	ctx := context.Background()

	in, err := c.Installation(ctx, 7)
	if err != nil || in.ID != 7 || in.AccountLogin != "acme" || in.Suspended {
		t.Errorf("installation 7: got %+v, %v", in, err)
	}
	if in, err := c.Installation(ctx, 8); err != nil || !in.Suspended {
		t.Errorf("suspended installation: got %+v, %v", in, err)
	}
	if _, err := c.Installation(ctx, 9); !errors.Is(err, codehost.ErrNotFound) {
		t.Errorf("unknown installation: got %v, want ErrNotFound", err)
	}
	// Another app's key: the API refuses the JWT, which is the service's problem, not the caller's.
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	if _, err := client(t, fake.URL, other).Installation(ctx, 7); !errors.Is(err, codehost.ErrUnavailable) {
		t.Errorf("wrong key: got %v, want ErrUnavailable", err)
	}
	fake.SetFailing(true)
	if _, err := c.Installation(ctx, 7); !errors.Is(err, codehost.ErrUnavailable) {
		t.Errorf("API down: got %v, want ErrUnavailable", err)
	}
}

func TestRepositories(t *testing.T) {
	t.Parallel()
	fake := codehosttest.New(t)
	c := client(t, fake.URL, fake.Key)
	for _, tt := range []struct {
		n, want, pages int
	}{
		{0, 0, 1}, {1, 1, 1}, {100, 100, 1}, {250, 250, 3}, {1050, codehost.MaxRepositories, 10},
	} {
		id := int64(1000 + tt.n)
		fake.AddInstallation(id, "acme", repos(tt.n)...)
		before := len(fake.Requests())
		got, err := c.Repositories(context.Background(), id)
		if err != nil || len(got) != tt.want {
			t.Errorf("%d repositories: got %d, %v; want %d", tt.n, len(got), err, tt.want)
			continue
		}
		if tt.want > 0 && (got[0].FullName != "acme/r0000" || got[tt.want-1].ID != int64(tt.want)) {
			t.Errorf("%d repositories: got first %+v, last %+v", tt.n, got[0], got[tt.want-1])
		}
		// One token, then the pages.
		if calls := len(fake.Requests()) - before; calls != 1+tt.pages {
			t.Errorf("%d repositories: got %d requests, want %d", tt.n, calls, 1+tt.pages)
		}
	}
	if _, err := c.Repositories(context.Background(), 404); !errors.Is(err, codehost.ErrNotFound) {
		t.Errorf("unknown installation: got %v, want ErrNotFound", err)
	}
}

func TestAnswersAreBounded(t *testing.T) {
	t.Parallel()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	for name, h := range map[string]http.HandlerFunc{
		"huge body": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"id":7,"account":{"login":"` + strings.Repeat("a", 5<<20) + `"}}`))
		},
		"not JSON": func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) },
		"other id": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"id":8,"account":{"login":"x"}}`))
		},
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
		},
		"forbidden": func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) },
	} {
		srv := httptest.NewServer(h)
		c, err := codehost.New(codehost.Config{APIURL: srv.URL, AppID: "1", PrivateKey: key,
			HTTPClient: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Installation(context.Background(), 7); !errors.Is(err, codehost.ErrUnavailable) {
			t.Errorf("%s: got %v, want ErrUnavailable", name, err)
		}
		srv.Close()
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, cfg := range []codehost.Config{
		{APIURL: "api.github.com", AppID: "1", PrivateKey: key},
		{APIURL: "ftp://api.github.com", AppID: "1", PrivateKey: key},
		{APIURL: "https://api.github.com", PrivateKey: key},
		{APIURL: "https://api.github.com", AppID: "1"},
	} {
		if _, err := codehost.New(cfg); err == nil {
			t.Errorf("%+v: got no error", cfg.APIURL)
		}
	}
}
