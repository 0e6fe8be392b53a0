package app

import (
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// gcPercent is the service's default GOGC on procs Ps. Its live heap is small (7-9 MB under load)
// while every request allocates about 13 KB of JSON and proto garbage, so Go's default of 100
// collects far more often than memory needs: 400 measured +35-45 % requests per second in
// scoring-bench. With two Ps or more, each collection is also a burst of slow requests (the marking
// takes a quarter of the Ps, and the stop that starts it waits for a thread the kernel may have
// descheduled), so 1,600 collects a quarter as often: at half the maximum rate the share of requests
// over 5 ms fell from 1.1-2.0 % to 0.5-0.9 %, and the p99 from 5.3-7.2 ms to 3.7-4.8 ms
// (docs/performance.md). With one P it stays 400: 1,600 did worse there, twice. After each collection the background sweeper holds the only P until it has swept, without
// polling the network (golang/go#56060), and a larger heap takes longer to sweep. The heap goal is
// bounded by GOMEMLIMIT, which setMemoryLimit takes from the container's limit. GOGC in the
// environment wins.
func gcPercent(procs int) int {
	if procs > 1 {
		return 1600
	}
	return 400
}

// setMemoryLimit sets Go's soft memory limit to 90 % of the container's memory limit (cgroup), so
// that the high GOGC cannot grow the heap into an out-of-memory kill when the live heap grows (records
// piling up while PostgreSQL is away): near the limit the collector runs more often instead. Without
// a container limit there is none; GOMEMLIMIT (or AUTOMEMLIMIT=off) in the environment wins. A
// limit that cannot be read leaves the process without one, which memlimit logs itself.
func setMemoryLimit(log *slog.Logger) {
	_, _ = memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup), memlimit.WithLogger(log))
}
