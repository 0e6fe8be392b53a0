package main

// The webhook fan-out bench (docs/performance.md), measured against a plain baseline of the same run:
// at least 0.7x the baseline's deliveries per second, and a p99 from committed change to delivery of
// at most 2x the baseline's, each at half its own maximum. It runs the service binary's entry point
// in a child process against a database of its own, registers -webhook-fanout organizations that each
// watch one server with one endpoint on a loopback receiver of its own, and commits changes to the
// outbox as the registry sync does. The baseline (webhooks_plain.go) does the same durable work with
// plain goroutines and no broker. Every delivery's signature is verified by its receiver with the
// Standard Webhooks reference library.
//
//  1. Saturation: -webhook-changes changes committed at once; deliveries per second from the first
//     commit to the last arrival.
//  2. Open loop at half that rate: changes committed on a fixed schedule (each on a goroutine of its
//     own, so that a slow commit does not delay the next) for -webhook-duration; the delay of each
//     delivery is its arrival minus its change's commit. -webhook-rounds rounds, each a service run
//     and a baseline run, so that a moment of the machine weighs on both; the verdict compares the
//     median p99s, as scoring-bench's open loop does (one run's p99 moved by 2x between runs here).

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// webhookConfig is the webhook bench's flags.
type webhookConfig struct {
	enabled, only bool
	fanout        int
	changes       int
	duration      time.Duration
	rounds        int
	workers       int
	// serviceRecords makes the plain baseline keep the service's records of a change rather than an
	// attempt row per delivery (plainDelivery).
	serviceRecords bool
}

// webhookFlags registers the webhook bench's flags; call it before flag.Parse.
func webhookFlags() *webhookConfig {
	w := &webhookConfig{}
	flag.BoolVar(&w.enabled, "webhooks", true, "also run the webhook fan-out bench after the read bench")
	flag.BoolVar(&w.only, "webhooks-only", false, "run the webhook fan-out bench only (no seed of the registry history, no read bench)")
	flag.IntVar(&w.fanout, "webhook-fanout", 10, "endpoints (each of its own organization and receiver) every change is delivered to")
	flag.IntVar(&w.changes, "webhook-changes", 2000, "changes committed at once by the saturation run")
	flag.DurationVar(&w.duration, "webhook-duration", 10*time.Second, "length of each open-loop run at half the saturation rate")
	flag.IntVar(&w.rounds, "webhook-rounds", 3, "open-loop rounds, each a service run and a baseline run; the verdict compares the median p99s")
	flag.IntVar(&w.workers, "webhook-workers", 0, "VERIFICATION_WEBHOOK_WORKERS of the service (0: its default)")
	flag.BoolVar(&w.serviceRecords, "webhook-baseline-service-records", false,
		"the plain baseline keeps the service's inbox, event, deliveries and attempts of each change, in the service's own tables, instead of an attempt row per delivery (the target's baseline)")
	return w
}

// runAll runs the read bench unless -webhooks-only, then the webhook bench when asked for.
func runAll(ctx context.Context, c config, w *webhookConfig, out io.Writer) error {
	if !w.only {
		if err := run(ctx, c, out); err != nil {
			return err
		}
		if !w.enabled {
			return nil
		}
	}
	if w.fanout < 1 || w.changes < 1 || w.duration <= 0 || w.rounds < 1 || w.workers < 0 {
		return errors.New("want -webhook-fanout, -webhook-changes, -webhook-duration and -webhook-rounds positive, -webhook-workers >= 0")
	}
	return runWebhooks(ctx, c, *w, out)
}

// webhookServer is the one server the bench's organizations watch.
var webhookServer = benchKey(seedSpec{Servers: 1, History: 2}, 0)

func runWebhooks(ctx context.Context, c config, w webhookConfig, out io.Writer) error {
	began := time.Now()
	dbURL, drop, err := loadtest.TempDatabase(ctx, c.adminURL, "verification_whbench")
	if err != nil {
		return err
	}
	defer drop()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	namespace := "vwhbench" + hex.EncodeToString(suffix)
	serviceAddr := loadtest.FreeAddr()
	env := map[string]string{
		"VERIFICATION_DATABASE_URL": dbURL, "VERIFICATION_ADMIN_TOKEN": adminToken, "VERIFICATION_HTTP_ADDR": serviceAddr,
		"VERIFICATION_GRPC_ADDR": loadtest.FreeAddr(), "VERIFICATION_BLOB_URL": "mem://", "VERIFICATION_LOG_LEVEL": "warn",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS": "127.0.0.0/8", "NATS_URL": c.natsURL, "NATS_NAMESPACE": namespace,
	}
	if w.workers > 0 {
		env["VERIFICATION_WEBHOOK_WORKERS"] = strconv.Itoa(w.workers)
	}
	migrate := func(dbURL string) error {
		return app.Main(ctx, []string{"migrate"}, func(k string) string {
			if k == "VERIFICATION_DATABASE_URL" {
				return dbURL
			}
			return env[k]
		}, io.Discard)
	}
	if err := migrate(dbURL); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := seed(ctx, dbURL, seedSpec{Servers: 1, History: 2, Span: 24 * time.Hour}); err != nil {
		return err
	}
	cfg, err := app.LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	defer deleteStreams(c.natsURL, namespace, cfg.Spec.Streams)
	if c.cpuProfile != "" {
		env[profileVar] = c.cpuProfile + ".webhooks"
	}
	svc, err := loadtest.StartChild(roleVar, "service", env, loadtest.WithStdout(os.Stderr))
	if err != nil {
		return err
	}
	defer svc.Stop()
	service := "http://" + serviceAddr
	if err := loadtest.WaitHTTP(ctx, service+"/readyz", 60*time.Second); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	k := newWebhookSink()
	client := loadtest.NewClient(4, 30*time.Second)
	for i := range w.fanout {
		if err := k.addEndpoint(ctx, client, service, i); err != nil {
			return err
		}
	}
	defer k.close()
	fmt.Fprintf(out, "\nwebhooks: fan-out %d (one organization, watch, endpoint and loopback receiver each), service workers %s, load average %s\n",
		w.fanout, orDefault(env["VERIFICATION_WEBHOOK_WORKERS"], "default"), loadAverage())

	var baseMigrate func(string) error // the baseline's own tables only
	if w.serviceRecords {
		baseMigrate = migrate
	}
	base, err := startPlainDelivery(ctx, c.adminURL, baseMigrate, w.fanout, workersOf(env))
	if err != nil {
		return fmt.Errorf("plain baseline: %w", err)
	}
	defer base.close()

	// Warm-up: connections to every receiver, prepared statements, consumers.
	if _, err := k.burst(ctx, serviceCommit(pool), 20, w.fanout); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := base.sink.burst(ctx, base.commit, 20, w.fanout); err != nil {
		return fmt.Errorf("baseline warm-up: %w", err)
	}

	sat, err := k.burst(ctx, serviceCommit(pool), w.changes, w.fanout)
	if err != nil {
		return fmt.Errorf("saturation: %w", err)
	}
	baseSat, err := base.sink.burst(ctx, base.commit, w.changes, w.fanout)
	if err != nil {
		return fmt.Errorf("baseline saturation: %w", err)
	}
	fmt.Fprintf(out, "%-60s %8.0f deliveries/s (%d changes x %d endpoints in %s)\n",
		"saturation: changes committed at once", sat.rate(), w.changes, w.fanout, sat.elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "%-60s %8.0f deliveries/s (%s)\n", "  plain baseline ("+baselineRecords(w.serviceRecords)+", no broker)", baseSat.rate(), baseSat.elapsed.Round(time.Millisecond))

	var p99s, baseP99s []time.Duration
	var changes []string
	for r := range w.rounds {
		lat, err := k.openLoop(ctx, serviceCommit(pool), sat.rate()/2/float64(w.fanout), w.duration, w.fanout)
		if err != nil {
			return fmt.Errorf("open loop: %w", err)
		}
		baseLat, err := base.sink.openLoop(ctx, base.commit, baseSat.rate()/2/float64(w.fanout), w.duration, w.fanout)
		if err != nil {
			return fmt.Errorf("baseline open loop: %w", err)
		}
		fmt.Fprintf(out, "%-60s p50 %s  p99 %s  max %s (%d deliveries)\n",
			fmt.Sprintf("open loop %d at half its maximum, %.0f deliveries/s", r+1, sat.rate()/2), ms(lat.p50), ms(lat.p99), ms(lat.max), lat.n)
		fmt.Fprintf(out, "%-60s p50 %s  p99 %s  max %s (%d deliveries)\n",
			fmt.Sprintf("  plain baseline at half its maximum, %.0f deliveries/s", baseSat.rate()/2), ms(baseLat.p50), ms(baseLat.p99), ms(baseLat.max), baseLat.n)
		p99s, baseP99s = append(p99s, lat.p99), append(baseP99s, baseLat.p99)
		changes = append(changes, lat.changes...)
	}
	stages, err := serviceStages(ctx, pool, changes)
	if err != nil {
		return fmt.Errorf("stages: %w", err)
	}
	fmt.Fprint(out, stages)
	p99, baseP99 := median(p99s), median(baseP99s)
	fmt.Fprintf(out, "%-60s service %s, baseline %s\n", fmt.Sprintf("median p99 of %d open-loop rounds", w.rounds), ms(p99), ms(baseP99))
	fmt.Fprintf(out, "%-60s throughput %.2fx (target >= 0.70), p99 %.2fx (target <= 2.00)\n", "fan-out against the plain baseline ("+baselineRecords(w.serviceRecords)+"), same run",
		sat.rate()/baseSat.rate(), float64(p99)/float64(baseP99))
	fmt.Fprintf(out, "%-60s %d bad signatures, %d duplicate deliveries (baseline: %d, %d)\n", "receivers",
		k.badSignatures.Load(), k.duplicates.Load(), base.sink.badSignatures.Load(), base.sink.duplicates.Load())
	fmt.Fprintf(out, "\nverification-bench webhooks: done in %s\n", time.Since(began).Round(time.Second))
	if n := k.badSignatures.Load() + base.sink.badSignatures.Load(); n > 0 {
		return fmt.Errorf("%d deliveries failed signature verification", n)
	}
	return nil
}

// baselineRecords describes what the plain baseline records (-webhook-baseline-service-records).
func baselineRecords(service bool) string {
	if service {
		return "the service's records"
	}
	return "an attempt row per delivery"
}

// webhookSink is the receivers: one loopback HTTP server per endpoint, which verifies each
// delivery's signature and notes when it arrived.
type webhookSink struct {
	mu        sync.Mutex
	servers   []*http.Server
	verifiers []*standardwebhooks.Webhook
	arrived   map[string][]time.Time // change id -> arrival of each delivery
	seen      map[string]bool        // change id + endpoint: deliveries are at least once
	total     int
	want      int
	done      chan struct{}

	badSignatures, duplicates atomic.Int64
}

func newWebhookSink() *webhookSink {
	return &webhookSink{arrived: map[string][]time.Time{}, seen: map[string]bool{}}
}

// addReceiver starts receiver i, which verifies deliveries with wh (nil until set), and returns
// its address.
func (k *webhookSink) addReceiver(i int, wh *standardwebhooks.Webhook) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { k.receive(i, rw, r) }),
		ReadHeaderTimeout: 10 * time.Second}
	k.mu.Lock()
	k.servers = append(k.servers, srv)
	k.verifiers = append(k.verifiers, wh)
	k.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), nil
}

// addEndpoint starts receiver i and registers it for a new organization watching webhookServer.
func (k *webhookSink) addEndpoint(ctx context.Context, client *http.Client, service string, i int) error {
	addr, err := k.addReceiver(i, nil)
	if err != nil {
		return err
	}

	admin := http.Header{"X-Admin-Token": {adminToken}, "Content-Type": {"application/json"}}
	var org struct {
		ID string `json:"id"`
	}
	if err := post(ctx, client, service+"/v1/intelligence/organizations", admin, map[string]any{"name": fmt.Sprintf("webhook-bench-%d", i)}, &org); err != nil {
		return err
	}
	var key struct {
		APIKey string `json:"api_key"`
	}
	if err := post(ctx, client, service+"/v1/intelligence/organizations/"+org.ID+"/api-keys", admin, map[string]any{"name": "bench"}, &key); err != nil {
		return err
	}
	bearer := http.Header{"Authorization": {"Bearer " + key.APIKey}, "Content-Type": {"application/json"}}
	var endpoint struct {
		Secret string `json:"secret"`
	}
	if err := post(ctx, client, service+"/v1/intelligence/webhooks/endpoints", bearer, map[string]any{"url": "http://" + addr + "/hook"}, &endpoint); err != nil {
		return err
	}
	wh, err := standardwebhooks.NewWebhook(endpoint.Secret)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.verifiers[i] = wh
	k.mu.Unlock()
	var watch struct {
		ID string `json:"id"`
	}
	return post(ctx, client, service+"/v1/intelligence/servers/"+webhookServer.Namespace+"/"+webhookServer.Name+"/watch", bearer, map[string]any{}, &watch)
}

func (k *webhookSink) receive(i int, rw http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	var event struct {
		Data struct {
			ChangeID string `json:"change_id"`
		} `json:"data"`
	}
	if err == nil {
		err = json.Unmarshal(body, &event)
	}
	k.mu.Lock()
	wh := k.verifiers[i]
	k.mu.Unlock()
	if err != nil || wh == nil || wh.Verify(body, r.Header) != nil {
		k.badSignatures.Add(1)
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	rw.WriteHeader(http.StatusNoContent)
	k.mu.Lock()
	defer k.mu.Unlock()
	key := event.Data.ChangeID + "/" + strconv.Itoa(i)
	if k.seen[key] {
		k.duplicates.Add(1)
		return
	}
	k.seen[key] = true
	k.arrived[event.Data.ChangeID] = append(k.arrived[event.Data.ChangeID], at)
	k.total++
	if k.total == k.want && k.done != nil {
		close(k.done)
		k.done = nil
	}
}

// expect resets the arrivals and returns a channel closed when n more deliveries have arrived.
func (k *webhookSink) expect(n int) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.arrived, k.total, k.want = map[string][]time.Time{}, 0, n
	done := make(chan struct{})
	k.done = done
	return done
}

func (k *webhookSink) close() {
	for _, s := range k.servers {
		_ = s.Close()
	}
}

// commitChange commits one change of webhookServer to the outbox, as the registry sync does.
func commitChange(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	c := &verificationv1.IntelChange{
		ChangeId: uuid.NewString(), Namespace: webhookServer.Namespace, Name: webhookServer.Name, FromVersion: "1.0.0",
		ToVersion: "1.1.0", ChangeType: "remote_url_changed", Risk: "high", Summary: "remote URL changed",
		Field: "remotes[0].url", OldValue: "https://a.example/mcp", NewValue: "https://b.example/mcp", DetectedAt: timestamppb.Now(),
	}
	payload, err := proto.Marshal(c)
	if err != nil {
		return "", err
	}
	_, err = outbox.Enqueue(ctx, pool, outbox.Event{ID: uuid.MustParse(c.GetChangeId()), Subject: "intel.change." + c.GetRisk(), Payload: payload})
	return c.GetChangeId(), err
}

// wait waits for done, giving up after limit.
func (k *webhookSink) wait(ctx context.Context, done <-chan struct{}, limit time.Duration) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		k.mu.Lock()
		defer k.mu.Unlock()
		return fmt.Errorf("only %d of %d deliveries arrived within %s", k.total, k.want, limit)
	}
}

type burstResult struct {
	deliveries int
	elapsed    time.Duration
}

func (b burstResult) rate() float64 { return float64(b.deliveries) / b.elapsed.Seconds() }

// commitFunc commits one change and returns its id.
type commitFunc func(context.Context) (string, error)

// serviceCommit commits changes to the service's outbox, as the registry sync does.
func serviceCommit(pool *pgxpool.Pool) commitFunc {
	return func(ctx context.Context) (string, error) { return commitChange(ctx, pool) }
}

// burst commits n changes from 8 connections at once and waits for every delivery.
func (k *webhookSink) burst(ctx context.Context, commit commitFunc, n, fanout int) (burstResult, error) {
	done := k.expect(n * fanout)
	start := time.Now()
	var next atomic.Int64
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := commit(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return burstResult{}, err
	}
	if err := k.wait(ctx, done, 5*time.Minute); err != nil {
		return burstResult{}, err
	}
	k.mu.Lock()
	var last time.Time
	for _, at := range k.arrived {
		for _, t := range at {
			if t.After(last) {
				last = t
			}
		}
	}
	k.mu.Unlock()
	return burstResult{deliveries: n * fanout, elapsed: last.Sub(start)}, nil
}

type latencyResult struct {
	n             int
	p50, p99, max time.Duration
	changes       []string // the ids of the changes committed
}

// openLoop commits changes at perSecond for d, each on its own goroutine, and returns the delays
// from each change's commit to each of its deliveries' arrival.
func (k *webhookSink) openLoop(ctx context.Context, commit commitFunc, perSecond float64, d time.Duration, fanout int) (latencyResult, error) {
	n := max(1, int(perSecond*d.Seconds()))
	interval := time.Duration(float64(time.Second) / perSecond)
	done := k.expect(n * fanout)
	var mu sync.Mutex
	committed := make(map[string]time.Time, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		// The schedule, not the previous commit, says when each change is committed.
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			wg.Wait()
			return latencyResult{}, ctx.Err()
		}
		wg.Go(func() {
			id, err := commit(ctx)
			at := time.Now()
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			committed[id] = at
			mu.Unlock()
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return latencyResult{}, err
	}
	if err := k.wait(ctx, done, 5*time.Minute); err != nil {
		return latencyResult{}, err
	}
	var delays []time.Duration
	k.mu.Lock()
	for id, at := range k.arrived {
		for _, t := range at {
			delays = append(delays, t.Sub(committed[id]))
		}
	}
	k.mu.Unlock()
	slices.Sort(delays)
	pct := func(p float64) time.Duration { return delays[int(p*float64(len(delays)-1))] }
	return latencyResult{n: len(delays), p50: pct(0.50), p99: pct(0.99), max: delays[len(delays)-1], changes: slices.Collect(maps.Keys(committed))}, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// loadAverage is the machine's 1-minute load average: the bench shares the machine with whatever
// else runs, and a reader of its figures should know how busy it was.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return "unknown"
	}
	return fields[0]
}
