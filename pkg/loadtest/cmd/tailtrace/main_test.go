package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"
)

func TestRunDescribesABurstDuringACollection(t *testing.T) {
	dir := t.TempDir()
	tf, err := os.Create(filepath.Join(dir, "svc.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rtrace.Start(tf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	gcFrom := time.Now()
	runtime.GC()
	gcTo := time.Now()
	time.Sleep(20 * time.Millisecond)
	rtrace.Stop()
	if err := tf.Close(); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("due_ms,latency_us,due_unix_ns\n")
	n := 0
	for due := start; due.Before(gcTo.Add(20 * time.Millisecond)); due = due.Add(time.Millisecond) {
		lat := 900
		// From 2 ms before the collection to 1 ms after it: it may take well under a millisecond.
		if !due.Before(gcFrom.Add(-2*time.Millisecond)) && !due.After(gcTo.Add(time.Millisecond)) {
			lat = 12000
		}
		fmt.Fprintf(&csv, "%.3f,%d,%d\n", float64(due.Sub(start))/1e6, lat, due.UnixNano())
		n++
	}
	timeline := filepath.Join(dir, "tl.csv")
	if err := os.WriteFile(timeline, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(tf.Name(), timeline, 5*time.Millisecond, 3, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{fmt.Sprintf("%d requests, ", n), "in 1 bursts", "(100 %) in bursts a mark phase overlapped", "during a mark phase"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestReadTimelineRefusesAnotherFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.csv")
	// The timeline before it carried wall times: nothing to lay over a trace.
	if err := os.WriteFile(path, []byte("due_ms,latency_us\n0.000,104\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTimeline(path); err == nil || !strings.Contains(err.Error(), "want due_ms,latency_us,due_unix_ns") {
		t.Fatalf("readTimeline: %v, want a refusal naming the expected header", err)
	}
}
