package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/services/scoring/app"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// profileVar names the file the service child writes its CPU profile to (-cpuprofile).
const profileVar = "SCORING_BENCH_CPUPROFILE"

// traceVar names the file the service child writes its execution trace to (-trace): where request
// goroutines waited to run (go tool trace -pprof=sched).
const traceVar = "SCORING_BENCH_TRACE"

// pprofVar names the address the service child serves net/http/pprof on (-pprof): a heap or CPU
// profile of one phase of a run, such as the open loop only.
const pprofVar = "SCORING_BENCH_PPROF"

// roleVar names the role of a child process of the bench: the service or the baseline.
const roleVar = "SCORING_BENCH_ROLE"

// serveRole runs the role named in the environment, if any, and reports whether it did.
func serveRole(ctx context.Context) (bool, error) {
	role := os.Getenv(roleVar)
	switch role {
	case "":
		return false, nil
	case "service", "service-unlimited", "service-unmetered", "baseline":
	default:
		// Not the bench itself: a child that ran the bench would start children of its own.
		return true, fmt.Errorf("unknown %s %q", roleVar, role)
	}
	ctx, cancel := loadtest.ChildContext(ctx)
	defer cancel()
	switch role {
	case "service", "service-unlimited", "service-unmetered":
		stop, err := loadtest.Profile(os.Getenv(profileVar), os.Getenv(traceVar))
		if err != nil {
			return true, err
		}
		defer stop()
		if addr := os.Getenv(pprofVar); addr != "" {
			// net/http/pprof registers itself on http.DefaultServeMux, which the service does not use.
			go func() {
				if err := http.ListenAndServe(addr, nil); err != nil {
					fmt.Fprintln(os.Stderr, "scoring-bench: pprof:", err)
				}
			}()
		}
		// Exactly the service binary's entry point, with its defaults (GOGC included); the twins only
		// swap the limiter of the scoring routes (limiter.go).
		var opts []app.Option
		switch role {
		case "service-unlimited":
			opts = append(opts, limitsOff)
		case "service-unmetered":
			opts = append(opts, everythingOff)
		}
		return true, app.MainWith(ctx, nil, os.Getenv, os.Stdout, opts...)
	case "baseline":
		models, err := model.Load()
		if err != nil {
			return true, err
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/score", baseline{engine: decision.New(models, policysignal.NewIndex(), decision.Config{})})
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		srv := &http.Server{Addr: os.Getenv("BENCH_BASELINE_ADDR"), Handler: mux}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return true, err
		}
		return true, nil
	}
	return false, nil
}
