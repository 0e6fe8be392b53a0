// Command audit-compare runs the audit engine (internal/audit) and the official MCP conformance
// suite (@modelcontextprotocol/conformance, server scenarios, --suite all) against the same servers,
// and reports in Markdown where the two agree on the checks both perform, where they do not, and
// how long each took. It is a report, not a gate: it exits 0 whatever the two find, and 1 only
// when something could not run.
//
// The targets: the audittest fixtures Correct, Full and Dual; every audittest defect whose check
// has a counterpart in the suite (pairs in compare.go); and the scoring service's own /mcp, built
// and started as a subprocess on a throwaway database (PostgreSQL and NATS, as `make deps` runs
// them), behind a TLS reverse proxy with a certificate of the fixtures' CA. The suite is a Node.js
// process: it trusts that CA through NODE_EXTRA_CA_CERTS. Each auditor gets a fresh instance of
// each fixture; the two runs of a target do not overlap.
//
// `make audit-compare` installs the suite (deploy/local/conformance-tools.sh) and runs:
//
//	go run ./services/verification/cmd/audit-compare -node bin/.../node -suite bin/.../index.js [-o report.md]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/mcpschema"
)

// config is the command's flags.
type config struct {
	node, suite     string
	out, suiteOut   string
	pg, nats        string
	scoring         bool
	only            string
	suiteRunTimeout time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.node, "node", "", "Node.js 22 binary (deploy/local/conformance-tools.sh prints it)")
	flag.StringVar(&c.suite, "suite", "", "the conformance suite's entry point (dist/index.js)")
	flag.StringVar(&c.out, "o", "", "also write the Markdown report to this file")
	flag.StringVar(&c.suiteOut, "suite-out", "", "keep the suite's per-scenario results (one folder per target), its output (<target>.log) and our reports (<target>.audit.json) under this directory (default: a temporary one, removed)")
	flag.StringVar(&c.pg, "pg", envOr("PGTEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL admin URL (for scoring's throwaway database)")
	flag.StringVar(&c.nats, "nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS URL (for scoring)")
	flag.BoolVar(&c.scoring, "scoring", true, "also compare on the scoring service's /mcp (needs PostgreSQL and NATS)")
	flag.StringVar(&c.only, "only", "", "compare on these targets only, comma-separated (correct, full, dual, a defect's name, scoring)")
	flag.DurationVar(&c.suiteRunTimeout, "suite-timeout", 5*time.Minute, "limit of one suite run (all scenarios against one target)")
	flag.Parse()
	if c.node == "" || c.suite == "" {
		fmt.Fprintln(os.Stderr, "usage: audit-compare -node <node> -suite <index.js> [-o report.md] (make audit-compare passes both)")
		os.Exit(2)
	}
	// The fixtures' servers log TLS handshakes that the suite abandons (its DNS-rebinding probe
	// names a Host the certificate does not cover) through the standard logger: expected noise.
	log.SetOutput(io.Discard)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "audit-compare:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// target is one server both auditors audit. Handler builds a fresh fixture; URL names a server
// that runs already (scoring), whose Port the engine must be allowed.
type target struct {
	name, description string
	handler           func() http.Handler
	url               string
	port              int
}

// fixtureTargets are the audittest fixtures compared: Correct, Full, Dual and the defects whose
// check has a counterpart in the suite (and that want no bearer token: the suite sends none).
func fixtureTargets() []target {
	ts := []target{
		{name: "correct", description: "official Go SDK v1.8.0, tools only", handler: audittest.Correct},
		{name: "full", description: "official Go SDK v1.8.0, tools, prompts, a resource and a template", handler: audittest.Full},
		{name: "dual", description: "hand-written, 2025-11-25 and 2026-07-28", handler: audittest.Dual},
	}
	for _, d := range audittest.Defects() {
		if d.Token != "" || !slices.ContainsFunc(pairs, func(p pair) bool { return p.Ours == d.Check }) {
			continue
		}
		ts = append(ts, target{name: d.Name, description: d.Description, handler: d.Handler})
	}
	return ts
}

func run(ctx context.Context, c config) error {
	tmp, err := os.MkdirTemp("", "audit-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	suiteOut := c.suiteOut
	if suiteOut == "" {
		suiteOut = filepath.Join(tmp, "suite")
	}
	ca, err := audittest.NewCA()
	if err != nil {
		return err
	}
	caFile, err := ca.WriteCertFile(tmp)
	if err != nil {
		return err
	}
	schemas, err := mcpschema.Load()
	if err != nil {
		return err
	}

	h := header{SuiteVersion: suiteVersion(c.suite), SuiteArgs: "server --suite all", Started: time.Now()}

	targets := fixtureTargets()
	var only []string
	if c.only != "" {
		only = strings.Split(c.only, ",")
		targets = slices.DeleteFunc(targets, func(t target) bool { return !slices.Contains(only, t.name) })
	}
	if c.scoring && (only == nil || slices.Contains(only, "scoring")) {
		s, err := startScoring(ctx, ca, c.pg, c.nats, tmp)
		if err != nil {
			return fmt.Errorf("scoring (run with -scoring=false to leave it out): %w", err)
		}
		defer s.stop()
		targets = append(targets, target{name: "scoring", description: "the scoring service's /mcp behind a TLS proxy", url: s.url, port: s.port})
	}

	var results []targetResult
	for _, t := range targets {
		r := targetResult{Name: t.name, Description: t.description}
		if r.Report, r.OurTime, err = runOurs(ctx, ca, schemas, t); err != nil {
			return fmt.Errorf("%s: our audit: %w", t.name, err)
		}
		dir := filepath.Join(suiteOut, t.name)
		if err := writeJSON(dir+".audit.json", r.Report); err != nil {
			return err
		}
		before, err := suiteStart(ctx, c)
		if err != nil {
			return err
		}
		if r.SuiteTime, err = runSuite(ctx, c, ca, caFile, t, dir); err != nil {
			return fmt.Errorf("%s: the suite: %w", t.name, err)
		}
		after, err := suiteStart(ctx, c)
		if err != nil {
			return err
		}
		r.SuiteStart = min(before, after)
		if r.Suite, err = readSuiteResults(dir); err != nil {
			return fmt.Errorf("%s: the suite's results: %w", t.name, err)
		}
		if len(r.Suite) == 0 {
			return fmt.Errorf("%s: the suite wrote no results under %s", t.name, dir)
		}
		fmt.Fprintf(os.Stderr, "audit-compare: %-32s ours %6s (%s), the suite %8s (%d scenarios; its start alone %s)\n",
			t.name, ms(r.OurTime), r.Report.Verdict, ms(r.SuiteTime), len(r.Suite), ms(r.SuiteStart))
		results = append(results, r)
	}

	var buf bytes.Buffer
	render(&buf, h, results)
	if c.out != "" {
		if err := os.WriteFile(c.out, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	_, err = os.Stdout.Write(buf.Bytes())
	return err
}

// writeJSON writes our report beside the suite's results, for a look at a disagreement.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// suiteVersion reads the suite's package.json, beside dist/.
func suiteVersion(suite string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(suite), "..", "package.json"))
	var p struct{ Version string }
	if err != nil || json.Unmarshal(b, &p) != nil || p.Version == "" {
		return "(unknown version)"
	}
	return p.Version
}

// serve starts a fresh instance of t's fixture, or returns t's running server; the returned
// function stops what it started.
func serve(ca *audittest.CA, t target) (string, int, func()) {
	if t.handler == nil {
		return t.url, t.port, func() {}
	}
	s := ca.Serve(t.handler())
	return s.URL, s.Port, s.Close
}

// runOurs runs our conformance audit of t and times it (the audit alone: the engine's set-up, the
// schemas included, is not counted).
func runOurs(ctx context.Context, ca *audittest.CA, schemas *mcpschema.Set, t target) (*audit.Report, time.Duration, error) {
	u, port, stop := serve(ca, t)
	defer stop()
	e, err := audit.New(audit.Config{
		RootCAs: ca.Pool(),
		Targets: safehttp.TargetPolicy{AllowedPorts: []int{port}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		Schemas: schemas,
	})
	if err != nil {
		return nil, 0, err
	}
	start := time.Now()
	r, err := e.Conformance(ctx, audit.Target{URL: u})
	return r, time.Since(start), err
}

// suiteStart times the suite's start alone (Node.js, loading the suite, printing its version): the
// floor under a suite run, timed just before and just after it (the quicker counts), as this
// machine's load may change from run to run.
func suiteStart(ctx context.Context, c config) (time.Duration, error) {
	start := time.Now()
	if err := exec.CommandContext(ctx, c.node, c.suite, "--version").Run(); err != nil {
		return 0, fmt.Errorf("the suite does not start (%s %s --version): %w", c.node, c.suite, err)
	}
	return time.Since(start), nil
}

// runSuite runs every server scenario of the suite against t, writing results under dir, and times
// it (the Node.js process from start to exit). The suite exits 1 when a scenario fails: a finding,
// not an error.
func runSuite(ctx context.Context, c config, ca *audittest.CA, caFile string, t target, dir string) (time.Duration, error) {
	u, _, stop := serve(ca, t)
	defer stop()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	logFile, err := os.Create(dir + ".log")
	if err != nil {
		return 0, err
	}
	defer logFile.Close()
	ctx, cancel := context.WithTimeout(ctx, c.suiteRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.node, c.suite, "server", "--url", u, "--suite", "all", "-o", dir)
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		return took, fmt.Errorf("%w (its output: %s)", err, logFile.Name())
	}
	return took, nil
}

// scoring is the scoring service running as a subprocess, behind a TLS proxy.
type scoring struct {
	url  string
	port int
	stop func()
}

// startScoring builds the scoring service, starts it on a throwaway database with its public URL set
// to a TLS proxy in front of it (with a leaf of ca), and waits until it is ready. A subprocess, not
// app.Main in this process: the verification module does not depend on scoring's.
func startScoring(ctx context.Context, ca *audittest.CA, pgURL, natsURL, tmp string) (*scoring, error) {
	bin := filepath.Join(tmp, "scoring")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/trustlayer/trustlayer/services/scoring/cmd/scoring")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	dbURL, drop, err := loadtest.TempDatabase(ctx, pgURL, "audit_compare")
	if err != nil {
		return nil, err
	}
	addr := loadtest.FreeAddr()
	backend := &url.URL{Scheme: "http", Host: addr}
	proxy := ca.Serve(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backend)
			r.Out.Host = r.In.Host // as a production front does: the service sees its public host
		},
		ErrorLog: log.New(io.Discard, "", 0),
	})

	var logs syncBuffer
	cmd := exec.Command(bin) // not CommandContext: stop shuts it down gracefully, before the drop
	cmd.Env = append(os.Environ(),
		"SCORING_DATABASE_URL="+dbURL,
		"SCORING_ADMIN_TOKEN=audit-compare-admin-token-0123456789",
		"SCORING_HTTP_ADDR="+addr,
		"SCORING_GRPC_ADDR=127.0.0.1:0",
		"SCORING_PUBLIC_URL="+proxy.Origin,
		"SCORING_LOG_LEVEL=warn",
		"NATS_URL="+natsURL,
		fmt.Sprintf("NATS_NAMESPACE=auditcompare%d", os.Getpid()),
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // not left running if this process dies
	if err := cmd.Start(); err != nil {
		proxy.Close()
		drop()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		proxy.Close()
		drop()
	}

	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-waitCtx.Done():
		}
	}()
	if err := loadtest.WaitHTTP(waitCtx, "http://"+addr+"/readyz", 60*time.Second); err != nil {
		stop()
		return nil, fmt.Errorf("not ready: %w; its output:\n%s", err, strings.TrimSpace(logs.String()))
	}
	return &scoring{url: proxy.URL, port: proxy.Port, stop: stop}, nil
}

// syncBuffer is a bytes.Buffer safe for the two copiers of a child's stdout and stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
