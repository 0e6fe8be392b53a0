// Command scoring-bench measures POST /v1/score through the full service (gateway, authentication,
// rate limiting with paid keys, metering, tracing) against a plain net/http + encoding/json handler
// doing the same model work, side by side in one run on one machine, and reports ratios:
//
//	go run ./services/scoring/cmd/scoring-bench [-duration 10s] [-workers 16]
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
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "length of each measured run")
	workers := flag.Int("workers", 16, "concurrent clients of the closed-loop runs")
	adminURL := flag.String("pg", envOr("PGTEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL admin URL")
	openRate := flag.Float64("rate", 0, "rate of the open-loop run (default: half the measured maximum)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the service process, over the whole run, to this file")
	natsURL := flag.String("nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS URL")
	pin := flag.Bool("pin", true, "run the service and the baseline on CPU 0 and the load on CPU 1 (needs 2 CPUs)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if served, err := serveRole(ctx); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "scoring-bench:", err)
			os.Exit(1)
		}
		return
	}
	var placement []loadtest.ChildOption
	if *pin {
		// The load generator is itself a busy HTTP client: sharing cores with it, a request waits for
		// the scheduler as often as for the service, and the open-loop tail measures the machine.
		if err := loadtest.PinSelf("1"); err != nil {
			fmt.Fprintln(os.Stderr, "scoring-bench:", err)
			os.Exit(1)
		}
		placement = append(placement, loadtest.WithCPUs("0"))
	}
	if err := run(ctx, *adminURL, *natsURL, *duration, *workers, *openRate, *cpuProfile, placement, os.Stdout); err != nil {
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

func run(ctx context.Context, adminURL, natsURL string, d time.Duration, workers int, openRate float64, cpuProfile string, placement []loadtest.ChildOption, out io.Writer) error {
	dbURL, drop, err := loadtest.TempDatabase(ctx, adminURL, "scoring_bench")
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
		b, err := bus.Connect(natsURL, "bench"+hex.EncodeToString(suffix), "scoring-bench", slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			_ = b.JS.DeleteStream(context.Background(), b.StreamName(bus.PolicyChanges.Name))
			b.Close()
		}
	}()
	// The service and the baseline run as processes of their own, as they would in production, so
	// that neither shares a heap, a garbage collector or a scheduler with the other or with the load.
	serviceEnv := func(addr, profile string) map[string]string {
		return map[string]string{
			"SCORING_DATABASE_URL": dbURL, "SCORING_ADMIN_TOKEN": adminToken, "SCORING_HTTP_ADDR": addr,
			"SCORING_GRPC_ADDR": loadtest.FreeAddr(), "NATS_URL": natsURL, "NATS_NAMESPACE": "bench" + hex.EncodeToString(suffix),
			"SCORING_LOG_LEVEL": "warn", profileVar: profile,
		}
	}
	svc, err := loadtest.StartChild(roleVar, "service", serviceEnv(serviceAddr, cpuProfile), placement...)
	if err != nil {
		return err
	}
	defer svc.Stop()
	unmeteredAddr := loadtest.FreeAddr()
	unmetered, err := loadtest.StartChild(roleVar, "service-unmetered", serviceEnv(unmeteredAddr, ""), placement...)
	if err != nil {
		return err
	}
	defer unmetered.Stop()
	plain, err := loadtest.StartChild(roleVar, "baseline", map[string]string{"BENCH_BASELINE_ADDR": baselineAddr}, placement...)
	if err != nil {
		return err
	}
	defer plain.Stop()
	service, base := "http://"+serviceAddr, "http://"+baselineAddr
	for _, u := range []string{service + "/healthz", base + "/healthz", "http://" + unmeteredAddr + "/healthz"} {
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

	where := "service, baseline and load share the CPUs"
	if len(placement) > 0 {
		where = "service and baseline on CPU 0, load on CPU 1"
	}
	fmt.Fprintf(out, "scoring-bench: %d workers, %s per run, %s (load GOMAXPROCS=%d)\n", workers, d, where, runtime.GOMAXPROCS(0))
	loadtest.ClosedLoop(ctx, client, plainReq, workers, d/4) // warm both paths up
	loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d/4)
	// Two interleaved rounds, so that a noisy moment of the machine hits both paths.
	var b, g [2]loadtest.Result
	for round := range 2 {
		b[round] = loadtest.ClosedLoop(ctx, client, plainReq, workers, d)
		g[round] = loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d)
	}
	// The runs stop early on Ctrl-C; report nothing of a cut run.
	if ctx.Err() != nil {
		return ctx.Err()
	}
	baseRPS := (b[0].RPS() + b[1].RPS()) / 2
	gwRPS := (g[0].RPS() + g[1].RPS()) / 2
	report(out, "baseline  POST /v1/score (closed loop)", b[0], b[1])
	report(out, "service   POST /v1/score (closed loop)", g[0], g[1])
	fmt.Fprintf(out, "throughput ratio service/baseline: %.2fx (target >= 0.5x)\n", gwRPS/baseRPS)

	// Limits and metering on versus off: the same service binary, the second with a limiter that
	// admits and meters nothing, same keys and body, in alternating rounds.
	unmeteredReq := func(i int) (string, string, []byte, http.Header) {
		return http.MethodPost, "http://" + unmeteredAddr + "/v1/score", single, authHeaders[i%len(keys)]
	}
	var on, off [2]loadtest.Result
	for round := range 2 {
		off[round] = loadtest.ClosedLoop(ctx, client, unmeteredReq, workers, d)
		on[round] = loadtest.ClosedLoop(ctx, client, gatewayReq, workers, d)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	report(out, "service, limits and metering off", off[0], off[1])
	report(out, "service, limits and metering on", on[0], on[1])
	fmt.Fprintf(out, "throughput ratio metering on/off: %.2fx (target >= 0.9x)\n",
		(on[0].RPS()+on[1].RPS())/(off[0].RPS()+off[1].RPS()))

	half := gwRPS / 2
	if openRate > 0 {
		half = openRate
	}
	// Two references for the service's tail: the baseline at the same rate (less loaded, as it does
	// less per request) and the baseline at half of its own maximum, where it keeps its core as busy
	// as the service keeps its own. On a machine whose scheduler stalls a core for milliseconds, the
	// second is what a plain handler's p99 is at the utilisation the target names.
	baseHalf := baseRPS / 2
	openBase := loadtest.OpenLoop(ctx, plainReq, half, d, 128)
	open := loadtest.OpenLoop(ctx, gatewayReq, half, d, 128)
	openBaseHalf := loadtest.OpenLoop(ctx, plainReq, baseHalf, d, 128)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, o := range []struct {
		name string
		rate float64
		r    loadtest.Result
	}{{"baseline", half, openBase}, {"service ", half, open}, {"baseline", baseHalf, openBaseHalf}} {
		fmt.Fprintf(out, "open loop %s at %5.0f req/s: p50 %-9s p99 %-9s max %-9s failed %d/%d (target p99 <= 5ms)\n", o.name,
			o.rate, o.r.P50.Round(time.Microsecond), o.r.P99.Round(time.Microsecond), o.r.Max.Round(time.Microsecond), o.r.Failed, o.r.Requests)
	}
	fmt.Fprintf(out, "open-loop p99 at half of each path's own maximum, service/baseline: %.2fx\n",
		float64(open.P99)/float64(openBaseHalf.P99))

	bt := loadtest.ClosedLoop(ctx, client, batchReq, workers, d)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	perClaimBatch := 1 / (bt.RPS() * 100)
	perClaimSingle := 1 / gwRPS
	report(out, "service   POST /v1/score/batch, 100 items", bt)
	fmt.Fprintf(out, "cost per claim: single %s, batch of 100 %s, ratio %.3fx (target <= 0.2x)\n",
		time.Duration(perClaimSingle*1e9).Round(time.Microsecond), time.Duration(perClaimBatch*1e9).Round(time.Microsecond), perClaimBatch/perClaimSingle)
	return nil
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
