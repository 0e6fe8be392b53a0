// Package tailtrace explains the slow requests of an open-loop run with an execution trace of the
// server taken during the same run: which garbage-collection mark phases overlapped each burst of slow
// requests, and which goroutines held the processors meanwhile. It is how the scoring service's
// open-loop tail was taken apart (docs/performance.md, "Known limits").
//
// Latencies are measured by the load generator and the trace by the server, in two processes: the
// trace's clock snapshots (Go 1.25 and later) turn its timestamps into wall time, and the requests
// carry the wall time they were due.
package tailtrace

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"golang.org/x/exp/trace"
)

// Request is one request of the run: when it was due and how long it took from then.
type Request struct {
	Due     time.Time
	Latency time.Duration
}

// Burst is a run of slow requests whose due times are at most burstGap apart.
type Burst struct {
	Start, End time.Time // due times of its first and last slow request
	Slow       int
	Max        time.Duration
	// DuringGC reports whether a mark phase overlapped the burst (from gcLead before its first slow
	// request was due to its last one being due plus the threshold).
	DuringGC bool
	// Running is the time each goroutine, named by its entry function, ran in that window.
	Running map[string]time.Duration
	// Longest is the longest single stretch a goroutine ran in the window, and LongestOf its entry.
	Longest   time.Duration
	LongestOf string
}

// Report is what Explain found over the span of the requests.
type Report struct {
	Requests, Slow int
	// MarkPhases is the number of garbage-collection mark phases that started within the span.
	MarkPhases int
	Bursts     []Burst
	// SlowDuringGC is the slow requests in bursts a mark phase overlapped.
	SlowDuringGC int
	// Running is the time each goroutine, named by its entry function, ran within the span.
	Running map[string]time.Duration
}

const (
	burstGap = 50 * time.Millisecond
	gcLead   = 10 * time.Millisecond
	markName = "GC concurrent mark phase"
)

type span struct{ start, end time.Time }

type stretch struct {
	span
	g trace.GoID
}

// Explain reads the trace and relates it to reqs: a request slower than threshold is slow.
func Explain(r io.Reader, reqs []Request, threshold time.Duration) (Report, error) {
	tr, err := read(r)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Requests: len(reqs)}
	if len(reqs) == 0 {
		return rep, nil
	}
	first := slices.MinFunc(reqs, func(a, b Request) int { return a.Due.Compare(b.Due) }).Due
	last := slices.MaxFunc(reqs, func(a, b Request) int { return a.Due.Compare(b.Due) }).Due
	for _, m := range tr.marks {
		if !m.start.Before(first) && m.start.Before(last) {
			rep.MarkPhases++
		}
	}
	rep.Running, _ = tr.running(span{first, last.Add(threshold)})

	slow := slices.DeleteFunc(slices.Clone(reqs), func(q Request) bool { return q.Latency <= threshold })
	slices.SortFunc(slow, func(a, b Request) int { return a.Due.Compare(b.Due) })
	rep.Slow = len(slow)
	for _, q := range slow {
		if n := len(rep.Bursts); n > 0 && q.Due.Sub(rep.Bursts[n-1].End) <= burstGap {
			b := &rep.Bursts[n-1]
			b.End, b.Slow, b.Max = q.Due, b.Slow+1, max(b.Max, q.Latency)
			continue
		}
		rep.Bursts = append(rep.Bursts, Burst{Start: q.Due, End: q.Due, Slow: 1, Max: q.Latency})
	}
	for i := range rep.Bursts {
		b := &rep.Bursts[i]
		w := span{b.Start.Add(-gcLead), b.End.Add(threshold)}
		b.DuringGC = slices.ContainsFunc(tr.marks, func(m span) bool { return m.end.After(w.start) && m.start.Before(w.end) })
		if b.DuringGC {
			rep.SlowDuringGC += b.Slow
		}
		var longest stretch
		b.Running, longest = tr.running(w)
		b.Longest, b.LongestOf = longest.end.Sub(longest.start), tr.entry[longest.g]
	}
	return rep, nil
}

// running is the time each goroutine entry ran within w, and the longest stretch (whole) that
// overlapped w.
func (tr traced) running(w span) (map[string]time.Duration, stretch) {
	out := map[string]time.Duration{}
	var longest stretch
	for _, s := range tr.stretches {
		start, end := maxTime(s.start, w.start), minTime(s.end, w.end)
		if !end.After(start) {
			continue
		}
		out[tr.entry[s.g]] += end.Sub(start)
		if s.end.Sub(s.start) > longest.end.Sub(longest.start) {
			longest = s
		}
	}
	return out, longest
}

// Top returns the n goroutine entries that ran longest, longest first.
func Top(running map[string]time.Duration, n int) []string {
	names := slices.Collect(maps.Keys(running))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(running[b], running[a]), cmp.Compare(a, b))
	})
	return names[:min(n, len(names))]
}

// traced is what Explain needs of a trace, in wall time.
type traced struct {
	marks     []span
	stretches []stretch             // a goroutine's stretches in the running state
	entry     map[trace.GoID]string // the entry function of each goroutine seen with a stack
}

func read(r io.Reader) (traced, error) {
	rd, err := trace.NewReader(r)
	if err != nil {
		return traced{}, fmt.Errorf("tailtrace: %w", err)
	}
	tr := traced{entry: map[trace.GoID]string{}}
	var (
		snapTrace trace.Time
		snapWall  time.Time
		synced    bool
		markStart time.Time
		marking   bool
		running   = map[trace.GoID]time.Time{}
	)
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return traced{}, fmt.Errorf("tailtrace: %w", err)
		}
		if ev.Kind() == trace.EventSync {
			if s := ev.Sync(); s.ClockSnapshot != nil {
				snapTrace, snapWall, synced = s.ClockSnapshot.Trace, s.ClockSnapshot.Wall, true
			}
			continue
		}
		if !synced {
			continue
		}
		t := snapWall.Add(time.Duration(ev.Time() - snapTrace))
		switch ev.Kind() {
		case trace.EventRangeBegin:
			if ev.Range().Name == markName {
				markStart, marking = t, true
			}
		case trace.EventRangeEnd:
			if ev.Range().Name == markName && marking {
				tr.marks = append(tr.marks, span{markStart, t})
				marking = false
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			g := st.Resource.Goroutine()
			if _, ok := tr.entry[g]; !ok {
				if f := outermost(st.Stack); f != "" {
					tr.entry[g] = f
				} else if f := outermost(ev.Stack()); f != "" {
					tr.entry[g] = f
				}
			}
			from, to := st.Goroutine()
			if from == trace.GoRunning {
				if start, ok := running[g]; ok {
					tr.stretches = append(tr.stretches, stretch{span{start, t}, g})
					delete(running, g)
				}
			}
			if to == trace.GoRunning {
				running[g] = t
			}
		}
	}
	if !synced {
		return traced{}, fmt.Errorf("tailtrace: the trace has no clock snapshot (it needs Go 1.25 or later)")
	}
	return tr, nil
}

// outermost is the last frame of a stack: the function the goroutine started in.
func outermost(s trace.Stack) string {
	var f string
	for fr := range s.Frames() {
		f = fr.Func
	}
	return f
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
