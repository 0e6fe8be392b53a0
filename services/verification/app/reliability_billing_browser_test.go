package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/trustlayer/trustlayer/pkg/browsertest"
)

// TestReliabilityDashboardBrowser renders the dashboard in headless Chromium with the workspace's key:
// a screenshot of the viewport that is not blank, the names users gave shown as text and never run
// (no script element, no dialog), and the held run listed.
func TestReliabilityDashboardBrowser(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org, key := s.newKey("dashboard-browser")
	seed := reliabilitySeed{s, org}
	evil := `<script>alert(1)</script>`
	repo := seed.repository(evil)
	tg := seed.target(repo, `<img src=x onerror="alert(2)">`, "https://mcp.acme.example/search")
	now := time.Now().UTC()
	base := seed.run(repo, tg, "succeeded", "allow", now.Add(-time.Hour), `[]`)
	seed.baseline(tg, base, "release-bot")
	held := seed.run(repo, tg, "needs_approval", "needs_approval", now, `[{"action":"needs_approval","message":"tool_added: <b>delete_all</b>"}]`)
	s.Must("GET", "/v1/agent-reliability/dashboard", nil, bearer(key), http.StatusOK)

	b := browsertest.NewBrowser(t)
	// The page takes the workspace's key, as every agent reliability route: the tab sends it on each request.
	b.Do(t, func(ctx context.Context, target *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, target, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, target, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + key}})
		return chromedp.Void{}, err
	})
	shot := b.Screenshot(t, s.URL+"/v1/agent-reliability/dashboard")
	b.CheckScreenshot(t, shot)

	if got := b.Text(t, ".repository h3"); !strings.Contains(got, evil) {
		t.Errorf("repository heading: got %q, want the name as text", got)
	}
	if got := browsertest.Eval[int](t, b, `document.querySelectorAll("script, img").length`); got != 0 {
		t.Errorf("the page has %d script or img elements, want none: user names became markup", got)
	}
	if d := b.Dialogs(); len(d) != 0 {
		t.Errorf("dialogs opened: %q, want none", d)
	}
	if got := b.Text(t, "#held tbody"); !strings.Contains(got, held) || !strings.Contains(got, "tool_added: <b>delete_all</b>") {
		t.Errorf("held runs: got %q, want the held run and its reason as text", got)
	}
	if got := b.Text(t, "#plan"); !strings.Contains(got, "free") || !strings.Contains(got, "2 / 100") {
		t.Errorf("plan: got %q, want free with 2 of 100 scans this month", got)
	}
}
