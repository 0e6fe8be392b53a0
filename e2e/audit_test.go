package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
	scoring "github.com/trustlayer/trustlayer/services/scoring/app"
	verification "github.com/trustlayer/trustlayer/services/verification/app"
)

// TestMain makes the process trust the certificate of net/http/httptest's TLS servers (one
// certificate for all of them, valid for 127.0.0.1), through SSL_CERT_FILE as an operator would
// trust a private CA: the verification service audits only over TLS, with the system's roots.
func TestMain(m *testing.M) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	srv.Close()
	dir, err := os.MkdirTemp("", "e2e-ca-")
	if err != nil {
		panic(err)
	}
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, cert, 0o600); err != nil {
		panic(err)
	}
	os.Setenv("SSL_CERT_FILE", file)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestScoringMCPPassesTheAudit audits the scoring service's own MCP endpoint, behind a TLS front
// (as in production), with the verification service: the conformance audit must have no failing
// check, and the readiness audit must find it production ready.
func TestScoringMCPPassesTheAudit(t *testing.T) {
	t.Parallel()
	var backend atomic.Pointer[url.URL]
	front := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(backend.Load())
		r.Out.Host = r.In.Host
	}})
	defer front.Close()
	frontURL, _ := url.Parse(front.URL)

	scoringSvc := servicetest.Start(t, servicetest.Env(t, scoring.EnvPrefix, map[string]string{
		scoring.EnvPrefix + "ADMIN_TOKEN": "e2e-admin-token-0123456789",
		scoring.EnvPrefix + "PUBLIC_URL":  front.URL,
	}), scoring.Boot)
	u, _ := url.Parse(scoringSvc.URL)
	backend.Store(u)

	verifier := servicetest.Start(t, servicetest.Env(t, verification.EnvPrefix, map[string]string{
		verification.EnvPrefix + "ADMIN_TOKEN":         "e2e-admin-token-0123456789",
		verification.EnvPrefix + "BLOB_URL":            "file://" + t.TempDir() + "?create_dir=1",
		verification.EnvPrefix + "ALLOW_PRIVATE_CIDRS": "127.0.0.0/8",
		verification.EnvPrefix + "AUDIT_ALLOWED_PORTS": frontURL.Port(),
	}), verification.Boot)
	tok := verifier.Must("POST", "/v1/audits/tokens", map[string]any{"subject": "e2e", "scopes": []string{"service:audit", "service:readiness"}},
		servicetest.Admin("e2e-admin-token-0123456789"), http.StatusCreated).Object(t)["token"].(string)

	var report struct {
		Verdict string
		Eras    []struct{ Era, Status string }
		Checks  []struct{ ID, Status, Details string }
	}
	verifier.Must("POST", "/v1/audits/mcp", map[string]any{"url": front.URL + "/mcp"}, servicetest.Bearer(tok), http.StatusOK).Decode(t, &report)
	for _, c := range report.Checks {
		if c.Status == "FAILURE" {
			t.Errorf("check %s fails on scoring's /mcp: %s", c.ID, c.Details)
		}
	}
	if report.Verdict == "fail" || len(report.Eras) == 0 || report.Eras[0].Status != "supported" {
		t.Errorf("verdict %s, eras %+v", report.Verdict, report.Eras)
	}

	var ready struct {
		Score           int  `json:"score"`
		ProductionReady bool `json:"production_ready"`
		Findings        []struct{ Rule, Severity, Tool, Evidence string }
	}
	verifier.Must("POST", "/v1/audits/readiness", map[string]any{"url": front.URL + "/mcp"}, servicetest.Bearer(tok), http.StatusOK).Decode(t, &ready)
	if !ready.ProductionReady {
		var b strings.Builder
		for _, f := range ready.Findings {
			b.WriteString("\n  " + f.Severity + " " + f.Rule + " " + f.Tool + ": " + f.Evidence)
		}
		t.Errorf("scoring's /mcp is not production ready (score %d):%s", ready.Score, b.String())
	}
}
