package meter_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

func TestNewRecordReadsBackWhatItWasGiven(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 1, 2, 3, 456789000, time.UTC)
	for _, r := range []meter.RequestRecord{
		{RequestID: uuid.Must(uuid.NewV7()).String(), KeyID: uuid.NewString(), AccountID: uuid.NewString(),
			Endpoint: meter.EndpointDenial, RouteID: "unified_score", ModelVersion: "0.3.3", ScoredAt: at},
		{RequestID: uuid.NewString() + ".99", KeyID: uuid.NewString(), AccountID: uuid.NewString(),
			Endpoint: meter.EndpointPriorAuth, RouteID: "batch_score", ModelVersion: "0.2.3-prior-auth-on-file", ScoredAt: at},
	} {
		p, err := meter.NewRecord(r)
		if err != nil {
			t.Fatalf("NewRecord(%+v): %v", r, err)
		}
		got := meter.RequestRecord{RequestID: p.RequestID(), KeyID: p.KeyID().String(), AccountID: p.AccountID().String(),
			Endpoint: p.Endpoint(), RouteID: p.RouteID(), ModelVersion: p.ModelVersion(), ScoredAt: p.ScoredAt()}
		if got != r {
			t.Errorf("read back\n got %+v\nwant %+v", got, r)
		}
		if b := p.AppendRequestID([]byte("id=")); string(b) != "id="+r.RequestID {
			t.Errorf("AppendRequestID: %q", b)
		}
	}
}

func TestNewRecordRefusesWhatTheDatabaseWould(t *testing.T) {
	t.Parallel()
	good := rec(uuid.NewString(), uuid.NewString(), uuid.NewString())
	for name, change := range map[string]func(*meter.RequestRecord){
		"request id not the service's": func(r *meter.RequestRecord) { r.RequestID = "req-1" },
		"key id not a UUID":            func(r *meter.RequestRecord) { r.KeyID = "key-1" },
		"account id not a UUID":        func(r *meter.RequestRecord) { r.AccountID = "" },
		"unknown endpoint":             func(r *meter.RequestRecord) { r.Endpoint = "appeals" },
		"empty route id":               func(r *meter.RequestRecord) { r.RouteID = "" },
		"empty model version":          func(r *meter.RequestRecord) { r.ModelVersion = "" },
		"zero scored_at":               func(r *meter.RequestRecord) { r.ScoredAt = time.Time{} },
	} {
		r := good
		change(&r)
		if _, err := meter.NewRecord(r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := meter.NewRecord(good); err != nil {
		t.Errorf("the unchanged record: %v", err)
	}
}

// TestPendingRecordsAreNotScanned measures what the collector must scan for records waiting for a
// flush: before records were packed, 20,000 of them were 3.9 MB of strings, a slice of them
// and a map keyed by their ids. Not parallel: the measure is the whole heap's.
func TestPendingRecordsAreNotScanned(t *testing.T) {
	const n = 20_000
	m := meter.New(memSink{}, meter.WithLogger(quiet), meter.WithMaxBatch(10*n))
	key, account := uuid.NewString(), uuid.NewString()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	before := scannable()
	for _, id := range ids {
		tk, err := m.Admit(context.Background(), key, open, 1)
		if err != nil {
			t.Fatal(err)
		}
		tk.Commit(1, rec(id, key, account))
	}
	after := scannable()
	t.Logf("%d pending records: %d scannable bytes", n, after-before)
	if after-before > 64<<10 {
		t.Errorf("%d pending records added %d scannable bytes, want under 64 KiB", n, after-before)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(ids)
}

// scannable is the heap the collector scans, after a collection.
func scannable() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestNewRecordAllocatesNothing: every scoring call's Commit packs its record, and the store formats
// one request id string per record it copies. Not parallel: AllocsPerRun refuses to run beside others.
func TestNewRecordAllocatesNothing(t *testing.T) {
	r := rec(uuid.NewString()+".12", uuid.NewString(), uuid.NewString())
	var p meter.Record
	if n := testing.AllocsPerRun(100, func() { p, _ = meter.NewRecord(r) }); n != 0 {
		t.Errorf("NewRecord: %v allocations, want 0", n)
	}
	var id string
	if n := testing.AllocsPerRun(100, func() { id = p.RequestID() }); n != 1 || id != r.RequestID {
		t.Errorf("RequestID: %q in %v allocations, want %q in 1", id, n, r.RequestID)
	}
}
