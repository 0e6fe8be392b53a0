package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// wrk drives the HTTP side of the pgbench comparison when it is installed (make bench installs it):
// pgbench is a C client that costs PostgreSQL's machine little per transaction, and wrk is its HTTP
// counterpart, where the bench's own Go client spends about two thirds of the service's CPU per
// request on the same two cores. Both run -c clients on 2 threads.

// wrkResult is what one wrk run measured.
type wrkResult struct {
	RPS    float64
	Errors int // non-2xx answers and socket errors
}

var (
	wrkRPSLine    = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkNon2xxLine = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses:\s+([0-9]+)`)
	wrkSocketLine = regexp.MustCompile(`(?m)^\s*Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)`)
)

// parseWrk reads the summary wrk prints at the end of a run.
func parseWrk(out []byte) (wrkResult, error) {
	m := wrkRPSLine.FindSubmatch(out)
	if m == nil {
		return wrkResult{}, fmt.Errorf("no Requests/sec line in wrk's output:\n%s", out)
	}
	var r wrkResult
	r.RPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if n := wrkNon2xxLine.FindSubmatch(out); n != nil {
		v, _ := strconv.Atoi(string(n[1]))
		r.Errors += v
	}
	if s := wrkSocketLine.FindSubmatch(out); s != nil {
		for _, g := range s[1:] {
			v, _ := strconv.Atoi(string(g))
			r.Errors += v
		}
	}
	return r, nil
}

// wrkScript writes a Lua script that sends GET paths[i] with keys[i] as bearer token, round robin
// over both, so that wrk reads every server as the Go client does.
func wrkScript(dir string, paths, keys []string) (string, error) {
	var b strings.Builder
	b.WriteString("local paths = {\n")
	for _, p := range paths {
		fmt.Fprintf(&b, "  %q,\n", p)
	}
	b.WriteString("}\nlocal keys = {\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %q,\n", "Bearer "+k)
	}
	// Each wrk thread has a Lua state of its own: start them at different places.
	b.WriteString(`}
local i = math.random(#paths)
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i], { ["Authorization"] = keys[i % #keys + 1] })
end
`)
	path := filepath.Join(dir, "reads.lua")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// wrkRun runs wrk against base with the script, clients connections on 2 threads, for d.
func wrkRun(ctx context.Context, bin, base, script string, clients int, d time.Duration) (wrkResult, error) {
	cmd := exec.CommandContext(ctx, bin, "-t", "2", "-c", strconv.Itoa(clients),
		"-d", strconv.Itoa(max(1, int(d.Round(time.Second).Seconds())))+"s", "-s", script, base)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	r, err := parseWrk(out)
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("wrk: %d failed requests (non-2xx or socket errors)\n%s", r.Errors, out)
	}
	return r, err
}
