package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// pgbenchPath finds pgbench: on PATH, or in the newest /usr/lib/postgresql/<version>/bin (Debian and
// Ubuntu do not put it on PATH without postgresql-client's wrappers).
func pgbenchPath() (string, error) {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) == 0 {
		return "", fmt.Errorf("pgbench not found on PATH nor in /usr/lib/postgresql/*/bin (it comes with PostgreSQL)")
	}
	slices.SortFunc(found, func(a, b string) int { return pgVersion(a) - pgVersion(b) })
	return found[len(found)-1], nil
}

func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// pgbenchCmd runs pgbench with args and returns its standard output. Ctrl-C interrupts it.
func pgbenchCmd(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("pgbench %v: %w: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// pgbenchInit creates pgbench's tables in the bench database (server-side generation, then vacuum and
// primary keys), at the given scale (100,000 accounts per unit).
func pgbenchInit(ctx context.Context, bin, dbURL string, scale int) error {
	_, err := pgbenchCmd(ctx, bin, "-i", "-q", "-I", "dtGvp", "-s", strconv.Itoa(scale), dbURL)
	return err
}

// pgbenchResult is one select-only run.
type pgbenchResult struct {
	TPS     float64
	Latency time.Duration
}

var (
	tpsLine     = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
	latencyLine = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
)

// parsePgbench reads the summary pgbench prints at the end of a run.
func parsePgbench(out []byte) (pgbenchResult, error) {
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return pgbenchResult{}, fmt.Errorf("no tps line in pgbench's output:\n%s", out)
	}
	var r pgbenchResult
	r.TPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if l := latencyLine.FindSubmatch(out); l != nil {
		ms, _ := strconv.ParseFloat(string(l[1]), 64)
		r.Latency = time.Duration(ms * float64(time.Millisecond))
	}
	return r, nil
}

// pgbenchSelect runs the built-in select-only script (one primary-key SELECT of pgbench_accounts per
// transaction) with clients connections on two threads for d, without vacuuming first.
func pgbenchSelect(ctx context.Context, bin, dbURL string, clients int, d time.Duration) (pgbenchResult, error) {
	out, err := pgbenchCmd(ctx, bin, "-S", "-n", "-c", strconv.Itoa(clients), "-j", "2",
		"-T", strconv.Itoa(max(1, int(d.Round(time.Second).Seconds()))), dbURL)
	if err != nil {
		return pgbenchResult{}, err
	}
	return parsePgbench(out)
}
