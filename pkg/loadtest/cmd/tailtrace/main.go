// Command tailtrace lays an open-loop timeline over an execution trace of the server taken in the
// same run, and says what the slow requests came with: garbage-collection mark phases, and the
// goroutines that held the processors.
//
//	go run ./services/scoring/cmd/scoring-bench -placement spread -open-only -rate 5000 -base-rate 6500 \
//		-rounds 1 -timeline /tmp/tl -trace /tmp/svc.trace
//	go run ./pkg/loadtest/cmd/tailtrace -trace /tmp/svc.trace -timeline /tmp/tl-1-service.csv
//
// The timeline is scoring-bench's CSV (due_ms, latency_us, due_unix_ns).
package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/trustlayer/trustlayer/pkg/loadtest/tailtrace"
)

func main() {
	tracePath := flag.String("trace", "", "execution trace of the server (runtime/trace)")
	timelinePath := flag.String("timeline", "", "the run's timeline CSV (due_ms, latency_us, due_unix_ns)")
	threshold := flag.Duration("threshold", 5*time.Millisecond, "a request slower than this is slow")
	bursts := flag.Int("bursts", 10, "how many of the largest bursts to describe")
	flag.Parse()
	if err := run(*tracePath, *timelinePath, *threshold, *bursts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tailtrace:", err)
		os.Exit(1)
	}
}

func run(tracePath, timelinePath string, threshold time.Duration, largest int, out io.Writer) error {
	if tracePath == "" || timelinePath == "" {
		return errors.New("-trace and -timeline are required")
	}
	reqs, err := readTimeline(timelinePath)
	if err != nil {
		return err
	}
	f, err := os.Open(tracePath)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := tailtrace.Explain(bufio.NewReaderSize(f, 1<<20), reqs, threshold)
	if err != nil {
		return err
	}
	pct := func(n, of int) float64 { return 100 * float64(n) / float64(max(of, 1)) }
	fmt.Fprintf(out, "%d requests, %d over %s (%.2f %%), in %d bursts; %d mark phases; %d slow requests (%.0f %%) in bursts a mark phase overlapped\n",
		rep.Requests, rep.Slow, threshold, pct(rep.Slow, rep.Requests), len(rep.Bursts), rep.MarkPhases, rep.SlowDuringGC, pct(rep.SlowDuringGC, rep.Slow))
	fmt.Fprintln(out, "goroutines that ran longest over the run (by entry function):")
	for _, name := range tailtrace.Top(rep.Running, 8) {
		fmt.Fprintf(out, "  %10s  %s\n", rep.Running[name].Round(10*time.Microsecond), name)
	}
	// Largest first; the order of equal ones is the order they came in.
	bs := slices.Clone(rep.Bursts)
	slices.SortStableFunc(bs, func(a, b tailtrace.Burst) int { return cmp.Compare(b.Slow, a.Slow) })
	start := reqs[0].Due
	for _, b := range bs[:min(largest, len(bs))] {
		gc := ""
		if b.DuringGC {
			gc = ", during a mark phase"
		}
		fmt.Fprintf(out, "burst at %.0f ms (%s long): %d slow, max %s%s; longest stretch %s by %s\n",
			float64(b.Start.Sub(start))/1e6, b.End.Sub(b.Start).Round(time.Millisecond), b.Slow, b.Max.Round(10*time.Microsecond), gc,
			b.Longest.Round(10*time.Microsecond), b.LongestOf)
		for _, name := range tailtrace.Top(b.Running, 3) {
			fmt.Fprintf(out, "  %10s  %s\n", b.Running[name].Round(10*time.Microsecond), name)
		}
	}
	return nil
}

// readTimeline reads scoring-bench's timeline CSV.
func readTimeline(path string) ([]tailtrace.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(header) != 3 || header[1] != "latency_us" || header[2] != "due_unix_ns" {
		return nil, fmt.Errorf("%s: header %v, want due_ms,latency_us,due_unix_ns", path, header)
	}
	var reqs []tailtrace.Request
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		us, err1 := strconv.ParseInt(rec[1], 10, 64)
		ns, err2 := strconv.ParseInt(rec[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		reqs = append(reqs, tailtrace.Request{Due: time.Unix(0, ns), Latency: time.Duration(us) * time.Microsecond})
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%s: no requests", path)
	}
	return reqs, nil
}
