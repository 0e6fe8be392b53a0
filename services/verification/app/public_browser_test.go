package app_test

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trustlayer/trustlayer/pkg/browsertest"
)

// TestPublicClaimPagesBrowser renders the claim pages in headless Chromium: a screenshot of the
// expected size that is not blank, markup injected through the query shown as text and never run,
// the claim flow driven from the page's own script, and the start page's redirect.
func TestPublicClaimPagesBrowser(t *testing.T) {
	t.Parallel()
	dns := newPublicFakeDNS(t)
	dns.setA("example.com", netip.MustParseAddr("127.0.0.1"))
	s := startService(t, publicClaimEnv(dns, "80", nil))
	publicSeedServer(t, s, "com.example", "weather")
	b := browsertest.NewBrowser(t)

	shot := b.Screenshot(t, s.URL+"/claim?server=com.example/weather&source=badge")
	b.CheckScreenshot(t, shot)
	if got := b.Text(t, "#server"); got != "com.example/weather" {
		t.Errorf("server shown: got %q", got)
	}

	// An injected script in a query parameter appears as text, and does not run.
	evil := `<script>window.__injected = 1; alert("xss")</script>`
	b.Open(t, s.URL+"/claim?server="+url.QueryEscape(evil)+"&source="+url.QueryEscape(`"><script>window.__injected=2</script>`))
	if notice := b.Text(t, "#notice"); !strings.Contains(notice, evil) {
		t.Errorf("notice: got %q, want the injected markup as text", notice)
	}
	if got := browsertest.Eval[bool](t, b, `window.__injected === undefined && document.querySelectorAll("script").length === 1`); !got {
		t.Error("the injected script ran, or became a script element")
	}
	if input := browsertest.Eval[string](t, b, `document.getElementById("server-input").value`); input != evil {
		t.Errorf("the form keeps the typed value as text: got %q", input)
	}
	if d := b.Dialogs(); len(d) != 0 {
		t.Errorf("dialogs opened: %q, want none", d)
	}

	// The page's script records the intent and shows the proofs to publish.
	b.Open(t, s.URL+"/claim?server=com.example/weather")
	b.Do(t, chromedp.Click(chromedp.ID("start")), chromedp.WaitVisible(chromedp.ID("dns-step")))
	if got := b.Text(t, "#dns-name"); got != "_mcp-claim.example.com" {
		t.Errorf("DNS record name shown: got %q", got)
	}
	value := b.Text(t, "#dns-value")
	if !strings.HasPrefix(value, "mcp-claim=") {
		t.Fatalf("DNS record value shown: got %q", value)
	}
	// Publishing the record and checking it from the page verifies the claim.
	dns.setTXT("_mcp-claim.example.com", value)
	b.Do(t, chromedp.Click(chromedp.CSS(`[data-method="dns"]`)), chromedp.WaitVisible(chromedp.ID("result")))
	if got := b.Text(t, "#result"); !strings.HasPrefix(got, "Verified") {
		t.Errorf("result: got %q, want Verified", got)
	}
	if n := s.Count(`SELECT count(*) FROM claim_intents WHERE status = 'verified' AND verified_method = 'dns'`); n != 1 {
		t.Errorf("verified claims: got %d, want 1", n)
	}
	if n := s.Count(`SELECT count(*) FROM public_analytics_events WHERE name IN ('claim_page_viewed', 'claim_intent_submitted', 'claim_verified')`); n < 3 {
		t.Errorf("analytics events of the page: got %d, want at least 3", n)
	}

	// The start page sends the browser on to the claim page.
	b.Open(t, s.URL+"/claim/start/com.example/weather?source=badge")
	b.Do(t, chromedp.WaitVisible(chromedp.ID("start")))
	loc := browsertest.Run(t, b, chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/claim" || u.Query().Get("server") != "com.example/weather" || u.Query().Get("source") != "badge" {
		t.Errorf("after the start page: at %q, want /claim?server=com.example/weather&source=badge", loc)
	}
}
