package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

const adminToken = "ingestion-test-admin-token"

// stack is one ingestion service started in-process with a fixture document server.
type stack struct {
	*servicetest.Service
	t    *testing.T
	docs *docServer
}

func startService(t *testing.T, extra map[string]string) *stack {
	t.Helper()
	env := servicetest.Env(t, app.EnvPrefix, map[string]string{
		"INGESTION_ADMIN_TOKEN":         adminToken,
		"INGESTION_BLOB_URL":            "file://" + t.TempDir() + "?create_dir=1",
		"INGESTION_ALLOW_PRIVATE_CIDRS": "127.0.0.0/8,::1",
		"INGESTION_FETCH_TIMEOUT":       "3s",
		"INGESTION_SCHEDULER_INTERVAL":  "1h",
	}, extra)
	svc := servicetest.Start(t, env, app.Boot)
	// The stream exists before the first event is relayed, so no test waits on provisioning.
	if _, err := svc.Bus.EnsureStream(context.Background(), bus.PolicyChanges); err != nil {
		t.Fatal(err)
	}
	return &stack{Service: svc, t: t, docs: newDocServer(t)}
}

// call sends a request with token as X-Admin-Token, or with no such header when token is empty.
func (s *stack) call(method, path string, body any, token string) servicetest.Reply {
	s.t.Helper()
	var header map[string]string
	if token != "" {
		header = servicetest.Admin(token)
	}
	return s.Do(method, path, body, header)
}

// admin calls with the admin token and fails the test unless the status is want.
func (s *stack) admin(method, path string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.Must(method, path, body, servicetest.Admin(adminToken), want)
	if want == http.StatusNoContent {
		return nil
	}
	return r.Object(s.t)
}

// docServer serves fixture documents whose content, type and status a test changes between runs.
type docServer struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]page
	hits  map[string]int
}

type page struct {
	status      int
	contentType string
	body        string
	delay       time.Duration
}

func newDocServer(t *testing.T) *docServer {
	d := &docServer{pages: map[string]page{}, hits: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		p, ok := d.pages[r.URL.Path]
		d.hits[r.URL.Path]++
		d.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		time.Sleep(p.delay)
		w.Header().Set("Content-Type", p.contentType)
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		_, _ = io.WriteString(w, p.body)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *docServer) set(path string, p page) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.contentType == "" {
		p.contentType = "text/html; charset=utf-8"
	}
	d.pages[path] = p
}

func (d *docServer) hitCount(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[path]
}

// url is the fixture URL of path, on host "localhost" (resolved by the service, allowed as loopback
// only through INGESTION_ALLOW_PRIVATE_CIDRS, which must list both 127.0.0.0/8 and ::1 since every
// address a name resolves to must pass).
func (d *docServer) url(path string) string {
	return strings.Replace(d.Server.URL, "127.0.0.1", "localhost", 1) + path
}

// literalSource is a registration of one fixture URL.
func (s *stack) literalSource(path string, overrides map[string]any) map[string]any {
	body := map[string]any{
		"organization": "Acme Health Plan", "program": "Commercial", "jurisdiction": "US-CA",
		"allowed_hosts": []string{"localhost"}, "adapter": "literal_url",
		"adapter_config": map[string]any{"url": s.docs.url(path)}, "cadence_seconds": 3600,
		"terms_review_state": "approved",
	}
	for k, v := range overrides {
		body[k] = v
	}
	return s.admin("POST", "/v1/sources", body, http.StatusCreated)
}

const policyV1 = `<html><head><title>Outpatient Advanced Imaging</title><style>p{margin:0}</style></head><body>
<nav>Home | Provider policies</nav>
<h1>Outpatient Advanced Imaging Policy</h1>
<p>Effective Date: January 1, 2026</p>
<h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when medically necessary.</p>
<p>CT of the abdomen (CPT 74150) is covered for suspected appendicitis in adults.</p>
<h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<h2>Criteria</h2>
<p>Imaging must follow six weeks of documented conservative therapy.</p>
</body></html>`

const policyV2 = `<html><head><title>Outpatient Advanced Imaging</title></head><body>
<nav>Home | Provider policies</nav>
<h1>Outpatient Advanced Imaging Policy</h1>
<p>Effective Date: March 1, 2026</p>
<h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when medically necessary.</p>
<h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<p>Prior authorization is required for MRI of the lumbar spine (CPT 72148) in all outpatient settings.</p>
<h2>Criteria</h2>
<p>Imaging must follow four weeks of documented conservative therapy.</p>
</body></html>`

// policyV2Rerendered has policyV2's text in other markup: not a change.
const policyV2Rerendered = `<!DOCTYPE html><html><body><div class="page">
<header><nav>Home | Provider policies</nav></header>
<main><h1 class="title">Outpatient   Advanced Imaging Policy</h1>
<div><p class="date">Effective Date: <b>March 1, 2026</b></p></div>
<section><h2>Coverage</h2>
<p>MRI of the brain without and with contrast (CPT 70553) is covered when <em>medically necessary</em>.</p></section>
<section><h2>Prior Authorization</h2>
<p>Prior authorization is required for MRI of the brain (CPT 70553) in all outpatient settings.</p>
<p>Prior authorization is required for MRI of the lumbar spine (CPT 72148) in all outpatient settings.</p></section>
<section><h2>Criteria</h2><p>Imaging must follow four weeks of documented conservative therapy.</p></section>
</main></div></body></html>`

// waitForPublished waits until the stream holds n change events and checks their payloads.
func (s *stack) waitForPublished(n int) {
	s.t.Helper()
	ctx := context.Background()
	stream, err := s.Bus.JS.Stream(ctx, s.Bus.StreamName("POLICY_CHANGES"))
	if err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		info, err := stream.Info(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		if int(info.State.Msgs) == n {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("stream holds %d events, want %d", info.State.Msgs, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for seq := uint64(1); seq <= uint64(n); seq++ {
		msg, err := stream.GetMsg(ctx, seq)
		if err != nil {
			s.t.Fatal(err)
		}
		var ev ingestionv1.PolicyChangePublished
		if err := proto.Unmarshal(msg.Data, &ev); err != nil {
			s.t.Fatal(err)
		}
		if msg.Subject != s.Bus.Subject("policy.change."+ev.GetChangeType()) || ev.GetChangeEventId() == "" ||
			msg.Header.Get("Nats-Msg-Id") != ev.GetChangeEventId() || ev.GetEvidenceQuote() == "" || ev.GetOrganization() != "Acme Health Plan" {
			s.t.Errorf("event %d: subject %s, payload %v", seq, msg.Subject, &ev)
		}
	}
}

func firstResource(t *testing.T, run map[string]any) map[string]any {
	t.Helper()
	res, _ := run["resources"].([]any)
	if len(res) == 0 {
		t.Fatalf("run has no resources: %v", run)
	}
	return res[0].(map[string]any)
}
