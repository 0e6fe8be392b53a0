package tailtrace

import (
	"bytes"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"testing"
	"time"
)

// spin keeps a processor busy for d.
func spin(d time.Duration, done chan<- struct{}) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
	close(done)
}

func TestExplainNamesTheCollectionAndTheBusyGoroutine(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan struct{})
	spinFrom := time.Now()
	go spin(40*time.Millisecond, done)
	<-done
	spinTo := time.Now()
	time.Sleep(2 * burstGap) // the two bursts below stay apart
	gcFrom := time.Now()
	runtime.GC()
	gcTo := time.Now()
	time.Sleep(10 * time.Millisecond)
	rtrace.Stop()
	end := time.Now()

	// A request every millisecond; those due while the goroutine spun, and from 2 ms before the
	// collection to 1 ms after it (it may take well under a millisecond), are slow.
	var reqs []Request
	for due := start; due.Before(end); due = due.Add(time.Millisecond) {
		lat := time.Millisecond
		if in(due, spinFrom, spinTo) || in(due, gcFrom.Add(-2*time.Millisecond), gcTo.Add(time.Millisecond)) {
			lat = 20 * time.Millisecond
		}
		reqs = append(reqs, Request{Due: due, Latency: lat})
	}
	rep, err := Explain(&buf, reqs, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rep.MarkPhases < 1 {
		t.Errorf("mark phases: %d, want the one runtime.GC ran", rep.MarkPhases)
	}
	if len(rep.Bursts) != 2 {
		t.Fatalf("bursts: %+v, want two (the spin, then the collection)", rep.Bursts)
	}
	spinning, collecting := rep.Bursts[0], rep.Bursts[1]
	if !collecting.DuringGC || rep.SlowDuringGC < collecting.Slow {
		t.Errorf("the burst of runtime.GC is not marked as during a collection: %+v (slow during GC %d)", collecting, rep.SlowDuringGC)
	}
	var spun time.Duration
	for name, d := range spinning.Running {
		if strings.HasSuffix(name, "tailtrace.spin") {
			spun += d
		}
	}
	if spun < 20*time.Millisecond {
		t.Errorf("the spinning goroutine ran %v in its burst, want most of 40ms; running: %v", spun, spinning.Running)
	}
	if top := Top(rep.Running, 1); len(top) != 1 || !strings.HasSuffix(top[0], "tailtrace.spin") {
		t.Errorf("Top = %v, want the spinning goroutine first", top)
	}
}

func TestExplainRefusesWhatIsNotATrace(t *testing.T) {
	if _, err := Explain(strings.NewReader("not a trace"), nil, time.Millisecond); err == nil {
		t.Fatal("Explain accepted a file that is not a trace")
	}
}

func in(t, from, to time.Time) bool { return !t.Before(from) && t.Before(to) }
