package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var testStream = jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"test.>"}, Duplicates: time.Minute}

func migratedPool(t *testing.T) *pgxpool.Pool {
	return pgtest.NewPool(t, outbox.Migrations())
}

// sharedBus connects to the shared NATS server under the test's own namespace and creates the test
// stream, deleted when the test ends.
func sharedBus(t *testing.T) (*bus.Bus, jetstream.Stream) {
	t.Helper()
	b, err := bus.Connect(natstest.URL(), natstest.Namespace(t), "outbox-test", quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	stream, err := b.EnsureStream(context.Background(), testStream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.JS.DeleteStream(context.Background(), b.StreamName(testStream.Name)) })
	return b, stream
}

// enqueue writes one event in its own transaction, as a use case would with its state change.
func enqueue(t *testing.T, pool *pgxpool.Pool, i int) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := outbox.Enqueue(ctx, tx, outbox.Event{Subject: "test.created", Payload: []byte(fmt.Sprintf("event-%d", i))})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return id
}

// streamIDs returns the Nats-Msg-Id of every message in the stream, in stream order.
func streamIDs(t *testing.T, s jetstream.Stream) []string {
	t.Helper()
	ctx := context.Background()
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestNoEventIsLostWhileNATSIsDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := migratedPool(t)
	srv := natstest.Start(t)
	b, err := bus.Connect(srv.URL(), "", "outbox-test", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stream, err := b.EnsureStream(ctx, testStream)
	if err != nil {
		t.Fatal(err)
	}
	relay := outbox.NewRelay(pool, b.JS, b.Subject, quiet, outbox.WithPollInterval(20*time.Millisecond), outbox.WithBatchSize(7))
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()

	var want []string
	for i := range 5 {
		want = append(want, enqueue(t, pool, i).String())
	}
	waitFor(t, "the first events to be relayed", func() bool { return len(streamIDs(t, stream)) == 5 })

	srv.Stop()
	for i := 5; i < 30; i++ { // written while NATS is down
		want = append(want, enqueue(t, pool, i).String())
	}
	var pendingWhileDown int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE published_at IS NULL").Scan(&pendingWhileDown); err != nil {
		t.Fatal(err)
	}
	if pendingWhileDown != 25 {
		t.Fatalf("pending while NATS is down: got %d, want 25", pendingWhileDown)
	}

	srv.Restart()
	waitFor(t, "NATS to come back", func() bool {
		stream, err = b.JS.Stream(ctx, testStream.Name)
		return err == nil
	})
	waitFor(t, "every event to be relayed", func() bool {
		var pending int
		_ = pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE published_at IS NULL").Scan(&pending)
		return pending == 0
	})
	got := streamIDs(t, stream)
	if len(got) != len(want) {
		t.Fatalf("stream holds %d messages, want %d (none lost, none doubled)", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("message %d: got id %s, want %s (order kept)", i, got[i], want[i])
		}
	}
	cancel()
	<-done
}

func TestRepublishIsDroppedByMsgID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migratedPool(t)
	b, stream := sharedBus(t)
	relay := outbox.NewRelay(pool, b.JS, b.Subject, quiet)

	id := enqueue(t, pool, 1)
	if n, err := relay.RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("RelayOnce: got %d %v, want 1 nil", n, err)
	}
	// A relay that crashed between publish and commit leaves the row pending: simulate it.
	if _, err := pool.Exec(ctx, "UPDATE outbox SET published_at = NULL WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	if n, err := relay.RelayOnce(ctx); n != 1 || err != nil {
		t.Fatalf("second RelayOnce: got %d %v, want 1 nil", n, err)
	}
	if got := streamIDs(t, stream); len(got) != 1 || got[0] != id.String() {
		t.Fatalf("stream: got %v, want exactly [%s]", got, id)
	}
	msg, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != b.Subject("test.created") {
		t.Errorf("subject: got %s, want it inside the namespace", msg.Subject)
	}
}

func TestRolledBackEventIsNeverPublished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migratedPool(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Enqueue(ctx, tx, outbox.Event{Subject: "test.created", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM outbox").Scan(&n); err != nil || n != 0 {
		t.Fatalf("outbox rows after rollback: got %d (%v), want 0", n, err)
	}
}

func TestEnqueueRejectsEventWithoutSubject(t *testing.T) {
	t.Parallel()
	if _, err := outbox.Enqueue(context.Background(), nil, outbox.Event{}); err == nil {
		t.Fatal("got nil, want an error")
	}
}

// listening waits until the relay's listener has issued LISTEN in the pool's database and returns its
// backend's process id.
func listening(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var pid int
	waitFor(t, "the relay to LISTEN", func() bool {
		err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query = 'LISTEN `+outbox.Channel+`' AND state = 'idle'`).Scan(&pid)
		return err == nil
	})
	return pid
}

// TestNotificationWakesTheRelay sets the poll interval to an hour: an event committed after the relay
// went idle is published only because the commit's notification woke it, on the first listening
// connection and on the one that replaces it after the database dropped it.
func TestNotificationWakesTheRelay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := migratedPool(t)
	b, stream := sharedBus(t)
	relay := outbox.NewRelay(pool, b.JS, b.Subject, quiet, outbox.WithPollInterval(time.Hour))
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()

	// Two events in a row: the first may ride on the look the relay takes right after LISTEN; the
	// second can only be relayed by its own notification.
	relayedOnNotification := func(what string) {
		t.Helper()
		var want []string
		for i := range 2 {
			want = append(want, enqueue(t, pool, i).String())
			waitFor(t, what, func() bool {
				got := streamIDs(t, stream)
				return len(got) > 0 && got[len(got)-1] == want[i]
			})
		}
	}
	pid := listening(t, pool)
	relayedOnNotification("the events to be relayed on their notifications")

	var terminated bool
	if err := pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("terminate the listener: got %v %v, want true", terminated, err)
	}
	waitFor(t, "the relay to LISTEN again", func() bool { return listening(t, pool) != pid })
	relayedOnNotification("the events to be relayed after the listener reconnected")
	if got := len(streamIDs(t, stream)); got != 4 {
		t.Errorf("stream holds %d messages, want 4", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}
}

// TestGatherPublishesTogether: with WithGather, events committed one at a time within the window
// after a notification are published in one transaction (one published_at, the transaction's time),
// where a relay that reads at once publishes the first before the second is committed.
func TestGatherPublishesTogether(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, stream := sharedBus(t)
	publishedApart := func(opts ...outbox.RelayOption) bool {
		pool := migratedPool(t)
		relay := outbox.NewRelay(pool, b.JS, b.Subject, quiet, append(opts, outbox.WithPollInterval(time.Hour))...)
		run, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- relay.Run(run) }()
		defer func() { stop(); <-done }()
		listening(t, pool)
		first := enqueue(t, pool, 1)
		time.Sleep(250 * time.Millisecond)
		second := enqueue(t, pool, 2)
		waitFor(t, "both events to be relayed", func() bool {
			ids := streamIDs(t, stream)
			return slices.Contains(ids, first.String()) && slices.Contains(ids, second.String())
		})
		var distinct int
		if err := pool.QueryRow(ctx, `SELECT count(DISTINCT published_at) FROM outbox`).Scan(&distinct); err != nil {
			t.Fatal(err)
		}
		return distinct > 1
	}
	if !publishedApart() {
		t.Fatal("without gathering, events committed 250 ms apart were published together")
	}
	if publishedApart(outbox.WithGather(1500 * time.Millisecond)) {
		t.Fatal("with a gather of 1.5s, events committed 250 ms apart were published apart")
	}
}

// TestQueueAllKeepsOrder writes many events in one statement: they are relayed in the order given,
// each with its own id, and the trace context reaches every one.
func TestQueueAllKeepsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migratedPool(t)
	b, stream := sharedBus(t)

	var evs []outbox.Event
	for i := range 250 {
		evs = append(evs, outbox.Event{Subject: "test.created", Payload: []byte(fmt.Sprintf("event-%d", i)),
			Headers: map[string]string{"X-Index": fmt.Sprint(i)}})
	}
	given := uuid.Must(uuid.NewV7())
	evs[7].ID = given
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batch := &pgx.Batch{}
	ids, err := outbox.QueueAll(ctx, batch, evs)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(evs) || ids[7] != given {
		t.Fatalf("ids: got %d (8th %s), want %d with the given id %s kept", len(ids), ids[7], len(evs), given)
	}

	relay := outbox.NewRelay(pool, b.JS, b.Subject, quiet, outbox.WithBatchSize(100))
	for total := 0; total < len(evs); {
		n, err := relay.RelayOnce(ctx)
		if err != nil || n == 0 {
			t.Fatalf("RelayOnce after %d: got %d %v, want more events", total, n, err)
		}
		total += n
	}
	got := streamIDs(t, stream)
	if len(got) != len(ids) {
		t.Fatalf("stream holds %d messages, want %d", len(got), len(ids))
	}
	for i, id := range ids {
		if got[i] != id.String() {
			t.Fatalf("message %d: got id %s, want %s (order kept)", i, got[i], id)
		}
	}
	msg, err := stream.GetMsg(ctx, 43)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != "event-42" || msg.Header.Get("X-Index") != "42" {
		t.Errorf("message 43: got %q with X-Index %q, want event-42 with 42", msg.Data, msg.Header.Get("X-Index"))
	}
}
