package main

import (
	"testing"
	"time"
)

func TestParsePgbench(t *testing.T) {
	t.Parallel()
	// The summary of pgbench 15 (-S -c 16 -j 2 -T 8 -n), as it prints it.
	out := []byte(`pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: simple
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 8 s
number of transactions actually processed: 379168
number of failed transactions: 0 (0.000%)
latency average = 0.338 ms
initial connection time = 14.093 ms
tps = 47396.012345 (without initial connection time)
`)
	got, err := parsePgbench(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (pgbenchResult{TPS: 47396.012345, Latency: 338 * time.Microsecond}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parsePgbench([]byte("pgbench: error: connection to server failed\n")); err == nil {
		t.Error("got no error for an output without a tps line")
	}
}
