// Command verification-bench measures the registry-intelligence reads of the verification service
// through its full HTTP path (gateway, bearer-key authentication, store) on a database seeded with a
// registry history of 1,000,000+ snapshots, and reports them against baselines of the same run
// (docs/performance.md):
//
//   - the server state read (GET /v1/intelligence/servers/{namespace}/{name}) against pgbench's
//     select-only script at the same concurrency, on the same PostgreSQL (target: at least 0.5x its
//     transactions per second);
//
//   - p50/p99 of the change feed (GET /v1/intelligence/changes) and of a server's history
//     (GET .../history) on the first page and deep pages reached by following next_cursor, whose ratio
//     shows that keyset pagination does not slow down with depth;
//
//   - EXPLAIN ANALYZE of the store's own statements.
//
//   - the coverage summary (GET /v1/coverage-summary) under load against a plain indexed count query,
//     and one computation of it against one count (coverage.go; -coverage-only runs it alone).
//
//   - webhook fan-out (webhooks.go): signed deliveries per second to loopback receivers, and p99 from
//     committed change to delivery at half that rate (-webhooks-only runs it alone).
//
//     go run ./services/verification/cmd/verification-bench [-duration 8s] [-workers 16]
//
// It needs PostgreSQL (a superuser, such as the local postgres role, for the bulk load), pgbench and
// NATS (make deps); it creates and drops a database of its own and deletes the NATS streams the
// service provisions in its own namespace.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// config is the bench's flags.
type config struct {
	adminURL, natsURL  string
	duration, latency  time.Duration
	workers, latencyWk int
	seed               seedSpec
	feedLimit, deep    int
	pgbenchScale       int
	cpuProfile         string
	throughputOnly     bool
	coverageOnly       bool
	serviceDBParams    string
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 8*time.Second, "length of each throughput run (service and pgbench, two rounds each)")
	flag.DurationVar(&c.latency, "latency", 3*time.Second, "length of each latency run")
	flag.IntVar(&c.workers, "workers", 16, "concurrent clients of the throughput runs (HTTP and pgbench)")
	flag.IntVar(&c.latencyWk, "latency-workers", 4, "concurrent clients of the latency runs")
	flag.StringVar(&c.adminURL, "pg", envOr("PGTEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL admin URL (a superuser)")
	flag.StringVar(&c.natsURL, "nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS URL")
	flag.IntVar(&c.seed.Servers, "servers", 10_000, "seeded servers")
	flag.IntVar(&c.seed.History, "history", 100, "history rows (snapshots) per seeded server")
	flag.IntVar(&c.seed.Long, "long", 2, "seeded servers with a long history")
	flag.IntVar(&c.seed.LongHistory, "long-history", 100_000, "history rows of each long-history server")
	flag.DurationVar(&c.seed.Span, "span", 2*365*24*time.Hour, "time the seeded history covers")
	flag.IntVar(&c.feedLimit, "feed-limit", 100, "limit of the change-feed pages (1..200)")
	flag.IntVar(&c.deep, "deep", 1000, "depth of the deep pages, in pages (limit 100), reached by following next_cursor")
	flag.IntVar(&c.pgbenchScale, "pgbench-scale", 10, "pgbench -i scale (100,000 accounts each)")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the service process, over the whole run, to this file")
	flag.StringVar(&c.serviceDBParams, "service-db-params", "", "query parameters added to the service's database URL, e.g. pool_max_conns=16 (experiments)")
	flag.BoolVar(&c.throughputOnly, "throughput-only", false, "measure the server state read against pgbench -S only (no latency runs, no EXPLAIN)")
	flag.BoolVar(&c.coverageOnly, "coverage-only", false, "measure the coverage summary against a plain count only (seed with -history 2 -long 0 for a quick run)")
	webhooks := webhookFlags()
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the bench at once, without the clean-up
	}()
	if served, err := serveRole(ctx); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "verification-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := c.check(); err != nil {
		fmt.Fprintln(os.Stderr, "verification-bench:", err)
		os.Exit(2)
	}
	if err := runAll(ctx, c, webhooks, os.Stdout); err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted (the database, the streams and the service are cleaned up)")
		}
		fmt.Fprintln(os.Stderr, "verification-bench:", err)
		os.Exit(1)
	}
}

func (c config) check() error {
	switch {
	case c.seed.Servers < 1 || c.seed.History < 2 || c.seed.Long < 0 || c.seed.Long > 0 && c.seed.LongHistory < 2:
		return fmt.Errorf("want -servers >= 1, -history >= 2, -long >= 0 and -long-history >= 2")
	case c.feedLimit < 1 || c.feedLimit > 200:
		return fmt.Errorf("-feed-limit must be in 1..200")
	case c.deep < 10:
		return fmt.Errorf("-deep must be at least 10")
	case c.workers < 1 || c.latencyWk < 1:
		return fmt.Errorf("-workers and -latency-workers must be at least 1")
	}
	return nil
}

// addParams appends query parameters to a URL.
func addParams(u, params string) string {
	if strings.Contains(u, "?") {
		return u + "&" + params
	}
	return u + "?" + params
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

const adminToken = "verification-bench-admin-token"

func run(ctx context.Context, c config, out io.Writer) error {
	began := time.Now()
	pgbench, err := pgbenchPath()
	if err != nil {
		return err
	}
	dbURL, drop, err := loadtest.TempDatabase(ctx, c.adminURL, "verification_bench")
	if err != nil {
		return err
	}
	defer drop()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	namespace := "vbench" + hex.EncodeToString(suffix)
	serviceAddr := loadtest.FreeAddr()
	env := map[string]string{
		"VERIFICATION_DATABASE_URL": dbURL, "VERIFICATION_ADMIN_TOKEN": adminToken, "VERIFICATION_HTTP_ADDR": serviceAddr,
		"VERIFICATION_GRPC_ADDR": loadtest.FreeAddr(), "VERIFICATION_BLOB_URL": "mem://", "VERIFICATION_LOG_LEVEL": "warn",
		"NATS_URL": c.natsURL, "NATS_NAMESPACE": namespace,
	}
	if c.serviceDBParams != "" {
		env["VERIFICATION_DATABASE_URL"] = addParams(dbURL, c.serviceDBParams)
	}
	// The service's own migrations, through its own entry point, before the seed writes the tables.
	if err := app.Main(ctx, []string{"migrate"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(out, "verification-bench: seeding %d servers x %d history rows + %d x %d ...\n",
		c.seed.Servers, c.seed.History, c.seed.Long, c.seed.LongHistory)
	st, err := seed(ctx, dbURL, c.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded %d servers, %d snapshots (history rows), %d changes in %s (checked against intelligence.Diff)\n",
		st.Servers, st.Snapshots, st.Changes, st.Elapsed.Round(100*time.Millisecond))
	t := time.Now()
	if err := pgbenchInit(ctx, pgbench, dbURL, c.pgbenchScale); err != nil {
		return err
	}
	fmt.Fprintf(out, "pgbench -i -s %d in %s\n", c.pgbenchScale, time.Since(t).Round(100*time.Millisecond))

	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	// Registered before the service starts, so that it runs after the service stopped (which could
	// otherwise provision the streams again).
	defer deleteStreams(c.natsURL, namespace, cfg.Spec.Streams)
	env[profileVar] = c.cpuProfile
	// The service logs (JSON, warnings and errors only) go to the bench's stderr, apart from its report.
	svc, err := loadtest.StartChild(roleVar, "service", env, loadtest.WithStdout(os.Stderr))
	if err != nil {
		return err
	}
	defer svc.Stop()
	service := "http://" + serviceAddr
	if err := loadtest.WaitHTTP(ctx, service+"/readyz", 60*time.Second); err != nil {
		return err
	}
	client := loadtest.NewClient(max(c.workers, c.latencyWk)*2, 30*time.Second)
	keys, err := apiKeys(ctx, client, service, c.workers)
	if err != nil {
		return err
	}
	headers := make([]http.Header, len(keys))
	for i, k := range keys {
		headers[i] = http.Header{"Authorization": {"Bearer " + k}}
	}
	b := &bench{ctx: ctx, c: c, client: client, service: service, headers: headers, keys: keys, out: out}

	if c.coverageOnly {
		if err := b.coverage(dbURL); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nverification-bench: done in %s\n", time.Since(began).Round(time.Second))
		return nil
	}
	// 1. Server state against pgbench -S.
	if err := b.throughput(pgbench, dbURL); err != nil {
		return err
	}
	// 2. The coverage summary against a plain count.
	if err := b.coverage(dbURL); err != nil {
		return err
	}
	if c.throughputOnly {
		fmt.Fprintf(out, "\nverification-bench: done in %s\n", time.Since(began).Round(time.Second))
		return nil
	}
	// 3. Latency of the feed and the histories, first and deep pages.
	feedCursor, historyCursor, err := b.latencies()
	if err != nil {
		return err
	}
	// 4. The plans behind them.
	if err := explainReads(ctx, dbURL, c.seed, keys[0], feedCursor, historyCursor, out); err != nil {
		return fmt.Errorf("explain: %w", err)
	}
	fmt.Fprintf(out, "\nverification-bench: done in %s\n", time.Since(began).Round(time.Second))
	return nil
}

// bench holds what the measurement runs share.
type bench struct {
	ctx     context.Context
	c       config
	client  *http.Client
	service string
	headers []http.Header
	keys    []string
	out     io.Writer
}

// throughput compares the server state read with pgbench -S at the same concurrency, in two
// interleaved rounds so that a noisy moment of the machine hits both.
func (b *bench) throughput(pgbench, dbURL string) error {
	c, out := b.c, b.out
	fmt.Fprintf(out, "\nthroughput: %d clients, %s per run, GOMAXPROCS=%d (the bench, the service and PostgreSQL share the machine)\n",
		c.workers, c.duration, runtime.GOMAXPROCS(0))
	state := func(i int) (string, string, []byte, http.Header) {
		k := benchKey(c.seed, i%c.seed.Servers)
		return http.MethodGet, b.service + "/v1/intelligence/servers/" + k.Namespace + "/" + k.Name, nil, b.headers[i%len(b.headers)]
	}
	// The first read of each server fills the service's cache of snapshots (internal/readcache); a
	// long-running replica has read them all, so the timed runs start after one pass over every
	// server, whose rate is the cold-cache figure.
	cold := b.pass(state, c.seed.Servers)
	report(out, fmt.Sprintf("first read of each of the %d servers (cold cache)", c.seed.Servers), cold)
	loadtest.ClosedLoop(b.ctx, b.client, state, c.workers, c.duration/4) // warm-up
	if _, err := pgbenchSelect(b.ctx, pgbench, dbURL, c.workers, 2*time.Second); err != nil {
		return err
	}
	var pg [2]pgbenchResult
	var gw [2]loadtest.Result
	for round := range 2 {
		var err error
		if pg[round], err = pgbenchSelect(b.ctx, pgbench, dbURL, c.workers, c.duration); err != nil {
			return err
		}
		if gw[round] = loadtest.ClosedLoop(b.ctx, b.client, state, c.workers, c.duration); b.ctx.Err() != nil {
			return b.ctx.Err()
		}
	}
	for _, p := range pg {
		fmt.Fprintf(out, "%-52s %8.0f tps    latency avg %s\n", fmt.Sprintf("pgbench -S -c %d -j 2 (select-only)", c.workers), p.TPS, p.Latency.Round(time.Microsecond))
	}
	for _, g := range gw {
		report(out, "GET /v1/intelligence/servers/{ns}/{name}", g)
	}
	pgTPS, gwRPS := (pg[0].TPS+pg[1].TPS)/2, (gw[0].RPS()+gw[1].RPS())/2
	fmt.Fprintf(out, "throughput ratio server state/pgbench -S, Go client: %.2fx (rounds %.2fx, %.2fx)\n",
		gwRPS/pgTPS, gw[0].RPS()/pg[0].TPS, gw[1].RPS()/pg[1].TPS)
	return b.throughputWrk(pgbench, dbURL)
}

// throughputWrk repeats the comparison with wrk on the HTTP side, when it is installed: a C client
// against a C client, as pgbench is.
func (b *bench) throughputWrk(pgbench, dbURL string) error {
	c, out := b.c, b.out
	bin, err := exec.LookPath("wrk")
	if err != nil {
		fmt.Fprintln(out, "wrk not installed (deploy/local/deps.sh wrk): no wrk run")
		return nil
	}
	paths := make([]string, c.seed.Servers)
	for i := range paths {
		k := benchKey(c.seed, i)
		paths[i] = "/v1/intelligence/servers/" + k.Namespace + "/" + k.Name
	}
	dir, err := os.MkdirTemp("", "verification-bench-wrk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script, err := wrkScript(dir, paths, b.keys)
	if err != nil {
		return err
	}
	if _, err := wrkRun(b.ctx, bin, b.service, script, c.workers, 2*time.Second); err != nil { // warm-up
		return err
	}
	var pg [2]pgbenchResult
	var wr [2]wrkResult
	for round := range 2 {
		if pg[round], err = pgbenchSelect(b.ctx, pgbench, dbURL, c.workers, c.duration); err != nil {
			return err
		}
		if wr[round], err = wrkRun(b.ctx, bin, b.service, script, c.workers, c.duration); err != nil {
			return err
		}
	}
	for round := range 2 {
		fmt.Fprintf(out, "%-52s %8.0f tps\n", fmt.Sprintf("pgbench -S -c %d -j 2 (select-only)", c.workers), pg[round].TPS)
		fmt.Fprintf(out, "%-52s %8.0f req/s\n", fmt.Sprintf("wrk -c %d -t 2 GET /v1/intelligence/servers/{ns}/{name}", c.workers), wr[round].RPS)
	}
	fmt.Fprintf(out, "throughput ratio server state/pgbench -S, wrk: %.2fx (target >= 0.5x; rounds %.2fx, %.2fx)\n",
		(wr[0].RPS+wr[1].RPS)/(pg[0].TPS+pg[1].TPS), wr[0].RPS/pg[0].TPS, wr[1].RPS/pg[1].TPS)
	return nil
}

// pass sends requests 0..n-1 of next, each once, with the throughput runs' concurrency.
func (b *bench) pass(next loadtest.Request, n int) loadtest.Result {
	var i, failed atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for range b.c.workers {
		wg.Go(func() {
			var mine []time.Duration
			for j := int(i.Add(1)) - 1; j < n && b.ctx.Err() == nil; j = int(i.Add(1)) - 1 {
				method, url, body, header := next(j)
				t := time.Now()
				if loadtest.Send(b.ctx, b.client, method, url, body, header) != nil {
					failed.Add(1)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return loadtest.Summarise(lat, len(lat), int(failed.Load()), time.Since(start))
}

// latencies measures the feed and history pages and returns the cursors of their deepest pages.
func (b *bench) latencies() (feedDeep, historyDeep string, err error) {
	c, out := b.c, b.out
	fmt.Fprintf(out, "\nlatency: %d clients, %s per run; walks are 1 client following next_cursor from page 1\n", c.latencyWk, c.latency)
	feed := b.service + "/v1/intelligence/changes?limit=" + strconv.Itoa(c.feedLimit)
	walk, err := b.walk(feed, c.deep)
	if err != nil {
		return "", "", err
	}
	fmt.Fprintf(out, "%-52s %s\n", fmt.Sprintf("feed walk, pages 1..%d (limit %d, %d changes)", len(walk.lat), c.feedLimit, walk.items), walk.summary())
	feedRuns := b.depths("feed", feed, walk)
	if b.ctx.Err() != nil {
		return "", "", b.ctx.Err()
	}
	for _, limit := range []int{20, 100} {
		r := loadtest.ClosedLoop(b.ctx, b.client, func(i int) (string, string, []byte, http.Header) {
			k := benchKey(c.seed, i%c.seed.Servers)
			return http.MethodGet, b.service + "/v1/intelligence/servers/" + k.Namespace + "/" + k.Name + "/history?limit=" + strconv.Itoa(limit), nil, b.headers[i%len(b.headers)]
		}, c.latencyWk, c.latency)
		report(out, fmt.Sprintf("history page 1, limit %d (%d servers round robin)", limit, c.seed.Servers), r)
	}
	var histRuns []loadtest.Result
	var hwalk walked
	if c.seed.Long > 0 {
		k := benchKey(c.seed, c.seed.Servers)
		history := b.service + "/v1/intelligence/servers/" + k.Namespace + "/" + k.Name + "/history?limit=100"
		if hwalk, err = b.walk(history, c.deep); err != nil {
			return "", "", err
		}
		fmt.Fprintf(out, "%-52s %s\n", fmt.Sprintf("long history walk, pages 1..%d (limit 100)", len(hwalk.lat)), hwalk.summary())
		histRuns = b.depths("long history", history, hwalk)
	}
	if b.ctx.Err() != nil {
		return "", "", b.ctx.Err()
	}
	ratio := func(name string, runs []loadtest.Result, w walked) {
		if len(runs) < 2 {
			return
		}
		first, deep := runs[0], runs[len(runs)-1]
		fmt.Fprintf(out, "%s: deep/first page p50 %.2fx, p99 %.2fx; walk last 10/first 10 pages median %.2fx (target: flat, <= 2x)\n",
			name, ratioOf(deep.P50, first.P50), ratioOf(deep.P99, first.P99), w.lastOverFirst())
	}
	ratio("feed keyset", feedRuns, walk)
	ratio("history keyset", histRuns, hwalk)
	return walk.cursors[len(walk.cursors)-1], hwalk.last(), nil
}

func ratioOf(a, b time.Duration) float64 { return float64(a) / float64(b) }

// depths replays pages 1, around depth/10 and around depth of a walk (ten pages ending there), each
// as a closed loop, and reports them.
func (b *bench) depths(name, base string, w walked) []loadtest.Result {
	n := len(w.cursors)
	var runs []loadtest.Result
	for _, end := range []int{1, b.c.deep / 10, b.c.deep} {
		if end > n || len(runs) > 0 && end <= 10 {
			continue
		}
		from := max(1, end-9)
		window := w.cursors[from-1 : end]
		r := loadtest.ClosedLoop(b.ctx, b.client, func(i int) (string, string, []byte, http.Header) {
			return http.MethodGet, pageURL(base, window[i%len(window)]), nil, b.headers[i%len(b.headers)]
		}, b.c.latencyWk, b.c.latency)
		label := fmt.Sprintf("%s page %d", name, end)
		if from < end {
			label = fmt.Sprintf("%s pages %d-%d", name, from, end)
		}
		report(b.out, label, r)
		runs = append(runs, r)
	}
	return runs
}

func pageURL(base, cursor string) string {
	if cursor == "" {
		return base
	}
	return base + "&cursor=" + url.QueryEscape(cursor)
}

// walked is one client's walk through a list: the latency of each page and the cursor it was asked
// with ("" for page 1).
type walked struct {
	lat     []time.Duration
	cursors []string
	items   int
}

func (w walked) summary() string {
	r := loadtest.Summarise(append([]time.Duration(nil), w.lat...), len(w.lat), 0, 0)
	return fmt.Sprintf("p50 %-9s p99 %-9s max %s", r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
}

func (w walked) last() string {
	if len(w.cursors) == 0 {
		return ""
	}
	return w.cursors[len(w.cursors)-1]
}

// lastOverFirst is the median latency of the walk's last ten pages over that of its first ten.
func (w walked) lastOverFirst() float64 {
	if len(w.lat) < 20 {
		return 0
	}
	median := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	return ratioOf(median(w.lat[len(w.lat)-10:]), median(w.lat[:10]))
}

// walk follows next_cursor from the first page for up to pages pages, timing each request up to its
// last byte (decoding the page is not timed).
func (b *bench) walk(base string, pages int) (walked, error) {
	var w walked
	cursor := ""
	for range pages {
		w.cursors = append(w.cursors, cursor)
		start := time.Now()
		body, err := loadtest.Fetch(b.ctx, b.client, http.MethodGet, pageURL(base, cursor), nil, b.headers[0])
		w.lat = append(w.lat, time.Since(start))
		if err != nil {
			return w, err
		}
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return w, fmt.Errorf("%s: %w", base, err)
		}
		w.items += len(page.Items)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return w, nil
}

func report(out io.Writer, name string, rs ...loadtest.Result) {
	for _, r := range rs {
		fmt.Fprintf(out, "%-52s %8.0f req/s  p50 %-9s p99 %-9s max %-9s failed %d/%d\n", name, r.RPS(),
			r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond), r.Failed, r.Requests)
		if r.FirstError != nil {
			fmt.Fprintf(out, "    first failure: %v\n", r.FirstError)
		}
	}
}

// apiKeys creates an organization and n API keys through the admin routes.
func apiKeys(ctx context.Context, client *http.Client, service string, n int) ([]string, error) {
	admin := http.Header{"X-Admin-Token": {adminToken}, "Content-Type": {"application/json"}}
	var org struct {
		ID string `json:"id"`
	}
	if err := post(ctx, client, service+"/v1/intelligence/organizations", admin, map[string]any{"name": "verification-bench"}, &org); err != nil {
		return nil, err
	}
	keys := make([]string, n)
	for i := range keys {
		var key struct {
			APIKey string `json:"api_key"`
		}
		if err := post(ctx, client, service+"/v1/intelligence/organizations/"+org.ID+"/api-keys", admin,
			map[string]any{"name": fmt.Sprintf("bench-%d", i)}, &key); err != nil {
			return nil, err
		}
		keys[i] = key.APIKey
	}
	return keys, nil
}

func post(ctx context.Context, client *http.Client, url string, header http.Header, body, into any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, answer)
	}
	return json.Unmarshal(answer, into)
}

// deleteStreams deletes the streams the service provisioned in the run's namespace.
func deleteStreams(natsURL, namespace string, streams []jetstream.StreamConfig) {
	b, err := bus.Connect(natsURL, namespace, "verification-bench", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range streams {
		_ = b.JS.DeleteStream(ctx, b.StreamName(s.Name))
	}
}
