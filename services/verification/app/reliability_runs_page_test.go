package app_test

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/browsertest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
)

// injection is markup a hostile target puts in a tool description: the evidence page must show it
// as text and never run it.
const injection = `<img src=x onerror="window.__injected=1;alert(1)"><script>window.__injected=2;alert(2)</script>`

// injecting serves Dual with the forecast tool's description replaced by injection.
type injecting struct{ inner http.Handler }

func (f injecting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	f.inner.ServeHTTP(rec, r)
	escaped := strings.ReplaceAll(injection, `"`, `\"`)
	body := bytes.ReplaceAll(rec.Body.Bytes(), []byte("Returns the daily weather forecast for one city over the next one to seven days."), []byte(escaped))
	maps.Copy(w.Header(), rec.Header())
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// TestReliabilityEvidencePage renders a run's evidence page in headless Chromium: the page shows the
// run, its decision and the target's markup as text, runs no script, and is not blank.
func TestReliabilityEvidencePage(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(injecting{inner: audittest.Dual()})
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port)
	o := s.runsOwner("Evidence page")
	_, target := s.reliabilityTarget(o, srv.URL, "mcp", "readiness")
	run := s.rrScan(o, map[string]any{"target_id": target, "commit_sha": `<b>abc</b>`})
	s.rrWork(1)
	id := run["id"].(string)
	page := s.Must("GET", runsPath+"/runs/"+id+"/evidence.html", nil, o.auth, http.StatusOK)
	if strings.Contains(string(page.Body), "<script>window.__injected") || strings.Contains(string(page.Body), "<b>abc</b>") {
		t.Fatal("the page carries the target's markup unescaped")
	}

	// The page needs the bearer key, which a browser's navigation does not send: serve the bytes
	// the service answered.
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", page.Header.Get("Content-Type"))
		_, _ = w.Write(page.Body)
	}))
	t.Cleanup(local.Close)
	b := browsertest.NewBrowser(t)
	shot := b.Screenshot(t, local.URL)
	b.CheckScreenshot(t, shot)
	if d := b.Dialogs(); len(d) != 0 {
		t.Errorf("the page opened dialogs %v", d)
	}
	if injected := browsertest.Eval[bool](t, b, `window.__injected === undefined && document.querySelectorAll("script").length === 0`); !injected {
		t.Error("the target's markup ran")
	}
	body := b.Text(t, "body")
	for _, want := range []string{id, injection, "<b>abc</b>", "Manifest", "matches", "succeeded"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page's text lacks %q", want)
		}
	}
}
