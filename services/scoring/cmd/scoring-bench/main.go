// Command scoring-bench measures POST /v1/score through the full service (gateway, authentication,
// rate limiting with paid keys, metering, tracing) against a plain net/http + encoding/json handler
// doing the same model work, side by side in one run on one machine, and reports ratios:
//
//	go run ./services/scoring/cmd/scoring-bench [-duration 10s] [-workers 16] [-rounds 3]
//
// The open-loop tail is measured in rounds that alternate between the baseline and the service, each
// at half of its own maximum, and judged by the median p99 of the rounds: on a shared virtual machine a
// slow spell of a few minutes moves a single run by 2-5x. -open-only with -rate and -base-rate runs
// only those rounds, and -service-env passes settings to the service (GOGC=400, for example), for
// experiments on the tail.
//
// It needs PostgreSQL and NATS (make deps); it creates and drops a database of its own.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

// options are the command's flags.
type options struct {
	adminURL, natsURL string
	d                 time.Duration
	warmup            time.Duration // closed loop on each path before anything is measured; 0: d/4
	workers           int
	rate, baseRate    float64 // open-loop rates of the service and the baseline; 0: half of the measured maximum
	rounds            int
	openOnly          bool
	cpuProfile        string
	trace             string
	timeline          string
	serviceEnv        map[string]string
	placement         []loadtest.ChildOption
	where             string // the placement, in words
	pprofAddr         string
	dbCPUs            []int // where the database's sessions of the run go (the load's CPU); nil: anywhere
}

func main() {
	o := options{serviceEnv: map[string]string{}}
	flag.DurationVar(&o.d, "duration", 10*time.Second, "length of each measured run")
	flag.DurationVar(&o.warmup, "warmup", 0, "closed-loop warm-up of each path before the measured runs (default: a quarter of -duration)")
	flag.IntVar(&o.workers, "workers", 16, "concurrent clients of the closed-loop runs")
	flag.StringVar(&o.adminURL, "pg", envOr("PGTEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL admin URL")
	flag.Float64Var(&o.rate, "rate", 0, "rate of the service's open-loop runs (default: half its measured maximum)")
	flag.Float64Var(&o.baseRate, "base-rate", 0, "rate of the baseline's open-loop runs (default: half its measured maximum)")
	flag.IntVar(&o.rounds, "rounds", 3, "open-loop rounds, each a baseline run and a service run")
	flag.BoolVar(&o.openOnly, "open-only", false, "run only the open-loop rounds (needs -rate and -base-rate)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the service process, over the whole run, to this file")
	flag.StringVar(&o.trace, "trace", "", "write an execution trace of the service process, over the whole run, to this file (large: use it with -open-only)")
	flag.StringVar(&o.timeline, "timeline", "", "write each open-loop run's latencies in the order they were due, as CSV, to files with this prefix")
	flag.StringVar(&o.natsURL, "nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS URL")
	flag.Func("service-env", "KEY=VALUE added to the service's environment (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE, got %q", v)
		}
		o.serviceEnv[k] = val
		return nil
	})
	placement := flag.String("placement", "pinned", "where the processes run: pinned (service and baseline on CPU 0, load and the run's PostgreSQL sessions on CPU 1), spread (service and baseline on CPUs 0-1, load and the sessions on CPU 1) or shared (everything anywhere)")
	flag.StringVar(&o.pprofAddr, "pprof", "", "serve net/http/pprof from the service process on this address (127.0.0.1:6061), to profile one phase of a run")
	flag.Parse()
	if o.rounds < 1 || (o.openOnly && (o.rate <= 0 || o.baseRate <= 0)) {
		fmt.Fprintln(os.Stderr, "scoring-bench: -rounds must be at least 1, and -open-only needs -rate and -base-rate")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if served, err := serveRole(ctx); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "scoring-bench:", err)
			os.Exit(1)
		}
		return
	}
	switch *placement {
	case "pinned", "spread":
		// The load generator is itself a busy HTTP client: sharing cores with it, a request waits for
		// the scheduler as often as for the service, and the open-loop tail measures the machine.
		if err := loadtest.PinSelf("1"); err != nil {
			fmt.Fprintln(os.Stderr, "scoring-bench:", err)
			os.Exit(1)
		}
		o.where = "service and baseline on CPU 0, load and PostgreSQL's sessions of the run on CPU 1"
		o.dbCPUs = []int{1}
		cpus := "0"
		if *placement == "spread" {
			// Two Ps: a garbage collection's mark worker or the usage flush's encoding runs on one while
			// requests go on on the other. With one P they wait (docs/performance.md).
			cpus, o.where = "0-1", "service and baseline on CPUs 0-1 (GOMAXPROCS=2), load and PostgreSQL's sessions of the run on CPU 1"
		}
		o.placement = append(o.placement, loadtest.WithCPUs(cpus))
	case "shared":
		o.where = "service, baseline and load share the CPUs"
	default:
		fmt.Fprintf(os.Stderr, "scoring-bench: -placement must be pinned, spread or shared, not %q\n", *placement)
		os.Exit(2)
	}
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scoring-bench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

const adminToken = "scoring-bench-admin-token"

var claimPayload = map[string]any{
	"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567, "payer_id": 60054,
	"cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0, "place_of_service": "11", "network_status": "in_network",
}

func run(ctx context.Context, o options, out io.Writer) error {
	d, workers, placement := o.d, o.workers, o.placement
	dbURL, drop, err := loadtest.TempDatabase(ctx, o.adminURL, "scoring_bench")
	if err != nil {
		return err
	}
	defer drop()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	serviceAddr, baselineAddr := loadtest.FreeAddr(), loadtest.FreeAddr()
	defer func() {
		// The service provisions its streams in the run's own namespace; leave nothing behind, after
		// the service stopped (defers run last in, first out).
		b, err := bus.Connect(o.natsURL, "bench"+hex.EncodeToString(suffix), "scoring-bench", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			_ = b.JS.DeleteStream(context.Background(), b.StreamName(bus.PolicyChanges.Name))
			b.Close()
		}
	}()
	// The service and the baseline run as processes of their own, as they would in production, so
	// that neither shares a heap, a garbage collector or a scheduler with the other or with the load.
	serviceEnv := func(addr, profile, trace, pprof string) map[string]string {
		env := map[string]string{
			"SCORING_DATABASE_URL": dbURL, "SCORING_ADMIN_TOKEN": adminToken, "SCORING_HTTP_ADDR": addr,
			"SCORING_GRPC_ADDR": loadtest.FreeAddr(), "NATS_URL": o.natsURL, "NATS_NAMESPACE": "bench" + hex.EncodeToString(suffix),
			"SCORING_LOG_LEVEL": "warn", profileVar: profile, traceVar: trace, pprofVar: pprof,
		}
		maps.Copy(env, o.serviceEnv)
		return env
	}
	svc, err := loadtest.StartChild(roleVar, "service", serviceEnv(serviceAddr, o.cpuProfile, o.trace, o.pprofAddr), placement...)
	if err != nil {
		return err
	}
	defer svc.Stop()
	unlimitedAddr, unmeteredAddr := loadtest.FreeAddr(), loadtest.FreeAddr()
	for role, addr := range map[string]string{"service-unlimited": unlimitedAddr, "service-unmetered": unmeteredAddr} {
		twin, err := loadtest.StartChild(roleVar, role, serviceEnv(addr, "", "", ""), placement...)
		if err != nil {
			return err
		}
		defer twin.Stop()
	}
	plain, err := loadtest.StartChild(roleVar, "baseline", map[string]string{"BENCH_BASELINE_ADDR": baselineAddr}, placement...)
	if err != nil {
		return err
	}
	defer plain.Stop()
	service, base := "http://"+serviceAddr, "http://"+baselineAddr
	for _, u := range []string{service + "/healthz", base + "/healthz", "http://" + unlimitedAddr + "/healthz", "http://" + unmeteredAddr + "/healthz"} {
		if err := loadtest.WaitHTTP(ctx, u, 60*time.Second); err != nil {
			return err
		}
	}
	client := loadtest.NewClient(workers*4, 10*time.Second)
	// Paid keys, as the issue asks; many of them, as many customers would, so that the 50 requests/s
	// of one paid key is not what the run measures: 1,000 of them admit 50,000 requests/s, well above
	// the service's maximum on two cores (200 admitted 10,000/s, which the service passed by 2026-11).
	keys, err := paidKeys(client, service, 1000)
	if err != nil {
		return err
	}
	single, _ := json.Marshal(map[string]any{"workflow": "healthcare.denial", "payload": claimPayload})
	items := make([]any, 100)
	for i := range items {
		items[i] = map[string]any{"workflow": "healthcare.denial", "payload": claimPayload}
	}
	batch, _ := json.Marshal(map[string]any{"items": items})
	jsonHeader := func() http.Header { return http.Header{"Content-Type": {"application/json"}} }
	authHeaders := make([]http.Header, len(keys))
	for i, k := range keys {
		authHeaders[i] = jsonHeader()
		authHeaders[i].Set("Authorization", "Bearer "+k)
	}
	plainReq := func(int) (string, string, []byte, http.Header) {
		return http.MethodPost, base + "/v1/score", single, jsonHeader()
	}
	gatewayReq := func(i int) (string, string, []byte, http.Header) {
		return http.MethodPost, service + "/v1/score", single, authHeaders[i%len(keys)]
	}
	batchReq := func(i int) (string, string, []byte, http.Header) {
		return http.MethodPost, service + "/v1/score/batch", batch, authHeaders[i%len(keys)]
	}

	fmt.Fprintf(out, "scoring-bench: %d workers, %s per run, %s (load GOMAXPROCS=%d)\n", workers, d, o.where, runtime.GOMAXPROCS(0))
	// Warm both paths up. An experiment on garbage collection needs the service's heap grown to its
	// steady size first: until then it allocates fresh pages, whose faults cost as much as the
	// collections saved. At GOGC 3,200 the heap was still growing, to 580 MB, through the whole of an
	// open-loop round that followed the default warm-up (gctrace, 2026-11-26); -warmup 15s reaches it.
	warmup := o.warmup
	if warmup <= 0 {
		warmup = d / 4
	}
	loadtest.ClosedLoop(ctx, client, plainReq, workers, warmup)
	loadtest.ClosedLoop(ctx, client, gatewayReq, workers, warmup)
	// The service's database would run on a host of its own: PostgreSQL's processes for the run's
	// sessions go to the load's core. On the service's core, a usage flush's COPY (tens of
	// milliseconds of the server's CPU a second) stalled the service. With them anywhere, the
	// service's open-loop p99 was 2.1x the baseline's pinned and 10.2-10.6 ms spread; with them on
	// CPU 1, 1.04-1.28x pinned and 6.7-7.1 ms spread (alternating runs, 2026-11-25). The warm-up
	// opened the pools' connections; the open rounds move any opened since.
	pinDB := func() {
		if len(o.dbCPUs) == 0 {
			return
		}
		if _, err := loadtest.PinBackends(ctx, o.adminURL, dbURL, o.dbCPUs...); err != nil {
			fmt.Fprintf(out, "WARNING: PostgreSQL's sessions stay where the scheduler puts them, the service's core included: %v\n", err)
			o.dbCPUs = nil
		}
	}
	pinDB()
	if o.openOnly {
		return openRounds(ctx, out, o, plainReq, gatewayReq, o.baseRate, o.rate)
	}
	// Two interleaved rounds, so that a noisy moment of the machine hits both paths, in the order
	// A B B A: the machine's speed drifts over minutes (by a fifth within one run, some days), and
	// in this order a steady drift weighs on both sides alike, where A B A B hands it all to B.
	var b, g [2]loadtest.Result
	abba(func(round int) { b[round] = loadtest.ClosedLoop(ctx, client, plainReq, workers, d) },
		func(round int) { g[round] = loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d) })
	// The runs stop early on Ctrl-C; report nothing of a cut run.
	if ctx.Err() != nil {
		return ctx.Err()
	}
	baseRPS := (b[0].RPS() + b[1].RPS()) / 2
	gwRPS := (g[0].RPS() + g[1].RPS()) / 2
	report(out, "baseline  POST /v1/score (closed loop)", b[0], b[1])
	report(out, "service   POST /v1/score (closed loop)", g[0], g[1])
	fmt.Fprintf(out, "throughput ratio service/baseline: %.2fx (target >= 0.8x)\n", gwRPS/baseRPS)

	// Limits and metering on versus off: the same service binary, the second with a limiter that
	// admits and counts nothing, same keys and body, in alternating rounds (A B B A again). Both store
	// every request's record, which the feedback route needs whether or not calls are metered; the
	// last pair also leaves the records out, to show what storing them costs on this machine, where
	// PostgreSQL writes them on the load's core.
	twinReq := func(addr string) loadtest.Request {
		return func(i int) (string, string, []byte, http.Header) {
			return http.MethodPost, "http://" + addr + "/v1/score", single, authHeaders[i%len(keys)]
		}
	}
	var on, off, onAgain, bare [2]loadtest.Result
	abba(func(round int) { off[round] = loadtest.ClosedLoop(ctx, client, twinReq(unlimitedAddr), workers, d) },
		func(round int) { on[round] = loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d) })
	abba(func(round int) { bare[round] = loadtest.ClosedLoop(ctx, client, twinReq(unmeteredAddr), workers, d) },
		func(round int) { onAgain[round] = loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d) })
	if ctx.Err() != nil {
		return ctx.Err()
	}
	report(out, "service, limits and metering off", off[0], off[1])
	report(out, "service, limits and metering on", on[0], on[1])
	fmt.Fprintf(out, "throughput ratio metering on/off: %.2fx (target >= 0.95x)\n",
		(on[0].RPS()+on[1].RPS())/(off[0].RPS()+off[1].RPS()))
	report(out, "service, limits, metering, records off", bare[0], bare[1])
	report(out, "service, limits and metering on", onAgain[0], onAgain[1])
	fmt.Fprintf(out, "throughput ratio with everything on/off: %.2fx (records included)\n",
		(onAgain[0].RPS()+onAgain[1].RPS())/(bare[0].RPS()+bare[1].RPS()))

	// The target names half of each path's own maximum, where the baseline keeps its core as busy as
	// the service keeps its own: on a machine whose scheduler stalls a core for milliseconds, that is
	// what a plain handler's p99 is at the same utilisation.
	half, baseHalf := gwRPS/2, baseRPS/2
	if o.rate > 0 {
		half = o.rate
	}
	if o.baseRate > 0 {
		baseHalf = o.baseRate
	}
	pinDB()
	if err := openRounds(ctx, out, o, plainReq, gatewayReq, baseHalf, half); err != nil {
		return err
	}
	// The open-loop rates came from maxima measured minutes before. A slow spell of the machine
	// during those closed-loop runs sets the rates at half of a wrong maximum (seen: the baseline at
	// 13k instead of 22k requests/s), so measure both maxima again and say when they moved.
	baseNow := loadtest.ClosedLoop(ctx, client, plainReq, workers, d/2)
	svcNow := loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d/2)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(out, "maxima after the open loop: baseline %.0f req/s (%+.0f%%), service %.0f req/s (%+.0f%%)\n",
		baseNow.RPS(), 100*(baseNow.RPS()/baseRPS-1), svcNow.RPS(), 100*(svcNow.RPS()/gwRPS-1))
	if moved(baseNow.RPS(), baseRPS) || moved(svcNow.RPS(), gwRPS) {
		fmt.Fprintln(out, "WARNING: a maximum moved by more than 20 % during the run: the machine's speed changed, and the open-loop rates were not half of it; run again")
	}

	bt := loadtest.ClosedLoop(ctx, client, batchReq, workers, d)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	perClaimBatch := 1 / (bt.RPS() * 100)
	perClaimSingle := 1 / gwRPS
	report(out, "service   POST /v1/score/batch, 100 items", bt)
	fmt.Fprintf(out, "cost per claim: single %s, batch of 100 %s, ratio %.3fx (target <= 0.15x)\n",
		time.Duration(perClaimSingle*1e9).Round(time.Microsecond), time.Duration(perClaimBatch*1e9).Round(time.Microsecond), perClaimBatch/perClaimSingle)
	return nil
}

// openWarmup starts every open-loop run: the 128 connections are dialled, and the service's key
// cache, idle while the other path ran, is filled again (1,000 keys read from PostgreSQL at once:
// without it, the first 200 ms of a 10 s run were slow, 2 % of its requests and so its whole p99).
const openWarmup = 2 * time.Second

// openRounds runs the open loop at fixed rates in rounds that alternate between the baseline and the
// service, reports every run and judges the tail by the median p99 of the rounds.
func openRounds(ctx context.Context, out io.Writer, o options, plainReq, gatewayReq loadtest.Request, baseRate, rate float64) error {
	var baseP99, svcP99 []time.Duration
	for round := range o.rounds {
		b := loadtest.OpenLoop(ctx, plainReq, loadtest.Schedule{Rate: baseRate, Warmup: openWarmup, Duration: o.d, Conns: 128})
		g := loadtest.OpenLoop(ctx, gatewayReq, loadtest.Schedule{Rate: rate, Warmup: openWarmup, Duration: o.d, Conns: 128})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, x := range []struct {
			name string
			rate float64
			r    loadtest.Result
		}{{"baseline", baseRate, b}, {"service", rate, g}} {
			fmt.Fprintf(out, "open loop, round %d, %-8s at %5.0f req/s: p50 %-9s p99 %-9s max %-9s over 5ms %5.2f%%  failed %d/%d\n", round+1, x.name,
				x.rate, x.r.P50.Round(time.Microsecond), x.r.P99.Round(time.Microsecond), x.r.Max.Round(time.Microsecond), 100*x.r.Over(5*time.Millisecond), x.r.Failed, x.r.Requests)
			if o.timeline != "" {
				if err := writeTimeline(fmt.Sprintf("%s-%d-%s.csv", o.timeline, round+1, x.name), x.rate, x.r); err != nil {
					return err
				}
			}
		}
		baseP99, svcP99 = append(baseP99, b.P99), append(svcP99, g.P99)
	}
	bm, sm := median(baseP99), median(svcP99)
	fmt.Fprintf(out, "open-loop median p99 of %d rounds: service %s at %.0f req/s, baseline %s at %.0f req/s, ratio %.2fx (target <= 1.5x)\n",
		o.rounds, sm.Round(time.Microsecond), rate, bm.Round(time.Microsecond), baseRate, float64(sm)/float64(bm))
	return nil
}

// writeTimeline writes one row per request of r, in the order they were due: when it was due (ms
// from the run's start, and wall clock in ns since the Unix epoch, to lay over a trace of the
// service with go run ./pkg/loadtest/cmd/tailtrace) and its latency (µs).
func writeTimeline(path string, rate float64, r loadtest.Result) error {
	var b strings.Builder
	b.WriteString("due_ms,latency_us,due_unix_ns\n")
	for i, l := range r.Timeline {
		due := time.Duration(float64(i) * float64(time.Second) / rate)
		fmt.Fprintf(&b, "%.3f,%d,%d\n", float64(due)/1e6, l.Microseconds(), r.Start.Add(due).UnixNano())
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// moved reports whether now is more than 20 % away from before.
func moved(now, before float64) bool { return now < 0.8*before || now > 1.2*before }

// median is the middle value (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func report(out io.Writer, name string, rs ...loadtest.Result) {
	for _, r := range rs {
		fmt.Fprintf(out, "%-44s %8.0f req/s  p50 %-9s p99 %-9s failed %d/%d\n", name, r.RPS(),
			r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Failed, r.Requests)
	}
}

func paidKeys(client *http.Client, service string, n int) ([]string, error) {
	keys := make([]string, n)
	for i := range keys {
		req, _ := http.NewRequest(http.MethodPost, service+"/v1/apikeys/issue", nil)
		req.Header.Set("X-Admin-Token", adminToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		var body struct {
			APIKey string `json:"api_key"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		if err != nil || body.APIKey == "" {
			return nil, fmt.Errorf("issue key: status %d: %v", resp.StatusCode, err)
		}
		keys[i] = body.APIKey
	}
	return keys, nil
}

// abba runs two rounds of a and b in the order a(0), b(0), b(1), a(1).
func abba(a, b func(round int)) {
	a(0)
	b(0)
	b(1)
	a(1)
}
