package store_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// webhookFixture stores an organization watching "acme/weather" with one endpoint, and returns the
// pool, the store and the endpoint.
func webhookFixture(t *testing.T) (*pgxpool.Pool, *store.Webhooks, webhooks.Endpoint) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	org := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO organizations (id, name) VALUES ($1, 'acme')`, org); err != nil {
		t.Fatal(err)
	}
	s := store.NewWebhooks(pool, events.Outbox{})
	e, err := s.CreateEndpoint(ctx, webhooks.Endpoint{ID: uuid.New(), OrganizationID: org, URL: "https://hooks.example.com", EventTypes: []string{}}, "whsec_AAAA", 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWatch(ctx, webhooks.Watch{ID: uuid.New(), OrganizationID: org, Namespace: "acme", Name: "weather",
		State: webhooks.WatchActive, Filters: webhooks.Filters{ChangeTypes: []string{}, MinRisk: "low", EndpointIDs: []uuid.UUID{}}}, 10); err != nil {
		t.Fatal(err)
	}
	return pool, s, e
}

// queueChange commits a change of acme/weather to the outbox, as the registry sync does, which queues
// it for the matcher.
func queueChange(t *testing.T, pool *pgxpool.Pool, changeID string) {
	t.Helper()
	payload, err := proto.Marshal(&verificationv1.IntelChange{ChangeId: changeID, Namespace: "acme", Name: "weather", ChangeType: "x", Risk: "low"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outbox.Enqueue(context.Background(), pool, outbox.Event{Subject: "intel.change.low", Payload: payload}); err != nil {
		t.Fatal(err)
	}
}

// eventOf builds a change's event as the matcher does, with a fixed body.
func eventOf(c webhooks.Change) (webhooks.Event, error) {
	return webhooks.Event{ID: uuid.New(), ChangeID: c.ID, Type: webhooks.EventTypeIntelChange, Payload: []byte(`{"a":1}`)}, nil
}

// sendNothing is a MatchNext send that keeps the claims and sends nothing: every first attempt stays
// leased.
func sendNothing(claims *[]webhooks.Claim) func([]webhooks.Claim) func() []webhooks.Attempted {
	return func(c []webhooks.Claim) func() []webhooks.Attempted {
		*claims = c
		return func() []webhooks.Attempted { return nil }
	}
}

// record matches a change and returns its delivery id once the first attempt's lease has run out, as
// when the replica that matched the change stopped before sending it: the job path may claim it.
func record(t *testing.T, s *store.Webhooks, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	changeID := uuid.NewString()
	queueChange(t, pool, changeID)
	var claims []webhooks.Claim
	found, err := s.MatchNext(ctx, func() {}, eventOf, time.Millisecond, sendNothing(&claims))
	if err != nil || !found || len(claims) != 1 {
		t.Fatalf("MatchNext = %v, %v, %v; want 1 delivery", claims, found, err)
	}
	time.Sleep(10 * time.Millisecond)
	var id uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT d.id FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.change_id = $1`, changeID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if id != claims[0].DeliveryID {
		t.Fatalf("stored delivery %s, claimed %s", id, claims[0].DeliveryID)
	}
	return id
}

// TestMatchNextSaysWhatIsQueuedBehind: a matcher that takes a change with others queued after it
// calls queued (another matcher must look), one that takes the last does not, and a change that has
// no match (a copy) or is dropped still says so.
func TestMatchNextSaysWhatIsQueuedBehind(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	first, second := uuid.NewString(), uuid.NewString()
	queueChange(t, pool, first)
	queueChange(t, pool, second)
	queueChange(t, pool, first) // a copy, behind the others
	for i, want := range []bool{true, true, false} {
		var claims []webhooks.Claim
		queued := false
		found, err := s.MatchNext(ctx, func() { queued = true }, eventOf, time.Minute, sendNothing(&claims))
		if err != nil || !found {
			t.Fatalf("MatchNext %d = %v, %v", i, found, err)
		}
		if queued != want {
			t.Fatalf("MatchNext %d: queued called %v, want %v", i, queued, want)
		}
	}
	queued := false
	if found, err := s.MatchNext(ctx, func() { queued = true }, eventOf, time.Minute, sendNothing(new([]webhooks.Claim))); err != nil || found || queued {
		t.Fatalf("MatchNext of an empty queue = %v, %v, queued %v", found, err, queued)
	}
}

// TestMatchNextLeasesFirstAttempts: a queued change's deliveries are committed leased to the matcher,
// with what sending needs and no job; nobody else may claim them during the lease; the queue is then
// empty; a copy of the change is taken but gives nothing; and a lease that runs out makes the
// delivery due for the scheduler.
func TestMatchNextLeasesFirstAttempts(t *testing.T) {
	t.Parallel()
	pool, s, e := webhookFixture(t)
	ctx := context.Background()
	changeID := uuid.NewString()
	queueChange(t, pool, changeID)
	var claims []webhooks.Claim
	found, err := s.MatchNext(ctx, func() {}, eventOf, 300*time.Millisecond, sendNothing(&claims))
	if err != nil || !found || len(claims) != 1 {
		t.Fatalf("MatchNext = %v, %v, %v; want 1 claim", claims, found, err)
	}
	c := claims[0]
	if c.Attempt != 1 || c.OrganizationID != e.OrganizationID || string(c.Payload) != `{"a":1}` || c.Endpoint.ID != e.ID ||
		c.Endpoint.URL != "https://hooks.example.com" || c.Endpoint.Secret != "whsec_AAAA" || c.Endpoint.Disabled || c.Endpoint.Revoked {
		t.Fatalf("claim = %+v", c)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox WHERE subject NOT LIKE 'intel.change.%'`); n != 0 {
		t.Fatalf("job rows = %d, want none: first attempts need no job", n)
	}
	if _, found, err := s.ClaimDelivery(ctx, c.DeliveryID, 1, time.Minute); err != nil || found {
		t.Fatalf("ClaimDelivery during the lease: found=%v err=%v", found, err)
	}
	claims = nil
	if found, err := s.MatchNext(ctx, func() {}, eventOf, time.Minute, sendNothing(&claims)); err != nil || found || len(claims) != 0 {
		t.Fatalf("MatchNext of an empty queue = %v, %v, %v", claims, found, err)
	}
	queueChange(t, pool, changeID) // sent again by the registry sync
	if found, err := s.MatchNext(ctx, func() {}, eventOf, time.Minute, sendNothing(&claims)); err != nil || !found || len(claims) != 0 {
		t.Fatalf("MatchNext of a copy = %v, %v, %v; want it taken, with no delivery", claims, found, err)
	}
	if n, err := s.EnqueueDue(ctx, 10, time.Hour); err != nil || n != 0 {
		t.Fatalf("EnqueueDue during the lease = %d, %v; want 0", n, err)
	}
	time.Sleep(400 * time.Millisecond)
	if n, err := s.EnqueueDue(ctx, 10, time.Hour); err != nil || n != 1 {
		t.Fatalf("EnqueueDue after the lease = %d, %v; want the first attempt's job", n, err)
	}
}

// TestMatchNextRecordsEndedAttempts: the outcomes that send's wait returns are recorded with the
// deliveries, in the matcher's transaction; the others stay leased for their own record.
func TestMatchNextRecordsEndedAttempts(t *testing.T) {
	t.Parallel()
	pool, s, e := webhookFixture(t)
	ctx := context.Background()
	other, err := s.CreateEndpoint(ctx, webhooks.Endpoint{ID: uuid.New(), OrganizationID: e.OrganizationID, URL: "https://late.example.com", EventTypes: []string{}}, "whsec_BBBB", 10)
	if err != nil {
		t.Fatal(err)
	}
	queueChange(t, pool, uuid.NewString())
	var late webhooks.Claim
	send := func(claims []webhooks.Claim) func() []webhooks.Attempted {
		return func() []webhooks.Attempted {
			var ended []webhooks.Attempted
			for _, c := range claims {
				if c.Endpoint.ID == other.ID {
					late = c
					continue
				}
				now := time.Now()
				ended = append(ended, webhooks.Attempted{Claim: c, Outcome: webhooks.Outcome{Status: webhooks.StatusSucceeded,
					Attempt: &webhooks.Attempt{Attempt: 1, StatusCode: 204, StartedAt: now, FinishedAt: now}, Endpoint: webhooks.EndpointEffect{Succeeded: true}}})
			}
			return ended
		}
	}
	if found, err := s.MatchNext(ctx, func() {}, eventOf, time.Minute, send); err != nil || !found {
		t.Fatalf("MatchNext = %v, %v", found, err)
	}
	rows, err := pool.Query(ctx, `SELECT d.endpoint_id, d.status, d.attempt_count, d.lease_until IS NOT NULL, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id)
		FROM webhook_deliveries d`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		status         string
		made, attempts int
		leased         bool
	}
	got := map[uuid.UUID]row{}
	var id uuid.UUID
	var r row
	if _, err := pgx.ForEachRow(rows, []any{&id, &r.status, &r.made, &r.leased, &r.attempts}, func() error { got[id] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := (row{status: webhooks.StatusSucceeded, made: 1, attempts: 1}); got[e.ID] != want {
		t.Errorf("answered delivery = %+v, want %+v", got[e.ID], want)
	}
	if want := (row{status: webhooks.StatusPending, leased: true}); got[other.ID] != want || late.Endpoint.ID != other.ID {
		t.Errorf("late delivery = %+v (claim %+v), want %+v", got[other.ID], late, want)
	}
}

// TestMatchNextDropsUnusableChanges: a queued payload that does not decode, and a change the matcher
// refuses, leave the queue with ErrChangeDropped instead of holding up the changes after them.
func TestMatchNextDropsUnusableChanges(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	if _, err := outbox.Enqueue(ctx, pool, outbox.Event{Subject: "intel.change.low", Payload: []byte{0xff, 0xff}}); err != nil {
		t.Fatal(err)
	}
	queueChange(t, pool, "refused")
	queueChange(t, pool, uuid.NewString())
	refuse := func(c webhooks.Change) (webhooks.Event, error) {
		if c.ID == "refused" {
			return webhooks.Event{}, errors.New("no")
		}
		return eventOf(c)
	}
	var claims []webhooks.Claim
	for i := range 2 {
		if found, err := s.MatchNext(ctx, func() {}, refuse, time.Minute, sendNothing(&claims)); !found || !errors.Is(err, webhooks.ErrChangeDropped) {
			t.Fatalf("MatchNext %d = %v, %v; want the change dropped", i, found, err)
		}
	}
	if found, err := s.MatchNext(ctx, func() {}, refuse, time.Minute, sendNothing(&claims)); err != nil || !found || len(claims) != 1 {
		t.Fatalf("MatchNext after the dropped ones = %v, %v, %v; want 1 claim", claims, found, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM webhook_pending_changes`); n != 0 {
		t.Fatalf("queued changes left = %d, want 0", n)
	}
}

// attempt claims the delivery, runs send on the claim and records its outcome, as
// webhooks.Service.Deliver does; it reports whether send ran and its outcome was recorded.
func attempt(ctx context.Context, s *store.Webhooks, id uuid.UUID, n int, lease time.Duration, send func(context.Context, webhooks.Claim) (webhooks.Outcome, error)) (bool, error) {
	c, found, err := s.ClaimDelivery(ctx, id, n, lease)
	if err != nil || !found {
		return false, err
	}
	out, err := send(ctx, c)
	if err != nil {
		return false, err
	}
	if err := s.RecordOutcome(ctx, c, out); err != nil {
		return false, err
	}
	return true, nil
}

func TestWebhookRecordsAreImmutable(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	id := record(t, s, pool)
	ran, err := attempt(ctx, s, id, 1, time.Minute, func(context.Context, webhooks.Claim) (webhooks.Outcome, error) {
		now := time.Now()
		return webhooks.Outcome{Status: webhooks.StatusSucceeded, Attempt: &webhooks.Attempt{Attempt: 1, StatusCode: 200, StartedAt: now, FinishedAt: now}}, nil
	})
	if err != nil || !ran {
		t.Fatalf("Attempt = %v, %v", ran, err)
	}
	for _, q := range []string{
		`UPDATE webhook_attempts SET status_code = 500`,
		`DELETE FROM webhook_attempts`,
		`UPDATE webhook_events SET payload = '\x00'`,
		`DELETE FROM webhook_events`,
	} {
		if _, err := pool.Exec(ctx, q); err == nil {
			t.Errorf("%s: succeeded, want the trigger to reject it", q)
		}
	}
}

// restrictViolation is the SQLSTATE the removal guards raise.
const restrictViolation = "23001"

// TestWebhookReferencedRowsAreNeverRemoved: endpoints and deliveries, which delivery records point to
// without a foreign key, refuse DELETE and TRUNCATE, so that no record is left pointing at nothing.
func TestWebhookReferencedRowsAreNeverRemoved(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	record(t, s, pool)
	for _, q := range []string{
		`DELETE FROM webhook_endpoints`,
		`DELETE FROM webhook_deliveries`,
		`TRUNCATE webhook_endpoints`,
		`TRUNCATE webhook_deliveries CASCADE`,
	} {
		var pgErr *pgconn.PgError
		if _, err := pool.Exec(ctx, q); !errors.As(err, &pgErr) || pgErr.Code != restrictViolation {
			t.Errorf("%s: %v, want it rejected with %s", q, err, restrictViolation)
		}
	}
	var endpoints, deliveries int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_endpoints), (SELECT count(*) FROM webhook_deliveries)`).Scan(&endpoints, &deliveries); err != nil {
		t.Fatal(err)
	}
	if endpoints != 1 || deliveries != 1 {
		t.Errorf("after the rejected removals: %d endpoints, %d deliveries; want 1 and 1", endpoints, deliveries)
	}
}

// TestMatchingLocksNoEndpointRow: recording a change's deliveries takes no lock on its endpoints'
// rows, so that matchers of concurrent changes to the same endpoints do not queue on them, and a
// transaction holding an endpoint's row does not hold up its deliveries.
func TestMatchingLocksNoEndpointRow(t *testing.T) {
	t.Parallel()
	pool, s, e := webhookFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, e.ID); err != nil {
		t.Fatal(err)
	}
	queueChange(t, pool, uuid.NewString())
	var claims []webhooks.Claim
	if found, err := s.MatchNext(ctx, func() {}, eventOf, time.Minute, sendNothing(&claims)); err != nil || !found || len(claims) != 1 {
		t.Fatalf("MatchNext with the endpoint's row locked = %v, %v, %v; want 1 delivery recorded", claims, found, err)
	}
}

func TestAttemptSkipsStaleJobs(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	id := record(t, s, pool)
	called := false
	send := func(context.Context, webhooks.Claim) (webhooks.Outcome, error) {
		called = true
		return webhooks.Outcome{Status: webhooks.StatusPending, NextAttemptAt: time.Now().Add(-time.Second),
			Attempt: &webhooks.Attempt{Attempt: 1, StatusCode: 500, StartedAt: time.Now(), FinishedAt: time.Now()}}, nil
	}
	if ran, err := attempt(ctx, s, id, 2, time.Minute, send); err != nil || ran || called {
		t.Fatalf("attempt 2 before attempt 1: ran=%v err=%v, want skipped", ran, err)
	}
	// While a worker holds the lease, a copy of the job finds the delivery taken.
	leased := func(ctx context.Context, c webhooks.Claim) (webhooks.Outcome, error) {
		if ran, err := attempt(ctx, s, id, 1, time.Minute, send); err != nil || ran {
			t.Errorf("copy of the job during the lease: ran=%v err=%v, want skipped", ran, err)
		}
		return send(ctx, c)
	}
	if ran, err := attempt(ctx, s, id, 1, time.Minute, leased); err != nil || !ran {
		t.Fatalf("attempt 1: ran=%v err=%v", ran, err)
	}
	if ran, _ := attempt(ctx, s, id, 1, time.Minute, send); ran {
		t.Fatal("a duplicate job for attempt 1 ran again")
	}

	// The retry is due (its time is in the past): the scheduler enqueues attempt 2 once.
	if n, err := s.EnqueueDue(ctx, 10, time.Hour); err != nil || n != 1 {
		t.Fatalf("EnqueueDue = %d, %v; want 1", n, err)
	}
	if n, _ := s.EnqueueDue(ctx, 10, time.Hour); n != 0 {
		t.Fatalf("EnqueueDue again = %d, want 0 (due time moved ahead)", n)
	}
	var payload []byte
	if err := pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE subject = 'webhook.delivery' ORDER BY seq DESC LIMIT 1`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var job verificationv1.WebhookDeliveryJob
	if err := proto.Unmarshal(payload, &job); err != nil || job.GetDeliveryId() != id.String() || job.GetAttempt() != 2 {
		t.Fatalf("job = %v (%v), want delivery %s attempt 2", &job, err, id)
	}
}

// TestExpiredLeaseFreesDelivery: a worker that failed to record (or crashed) leaves nothing behind
// but its lease; once the lease runs out the redelivered job makes the attempt.
func TestExpiredLeaseFreesDelivery(t *testing.T) {
	t.Parallel()
	pool, s, _ := webhookFixture(t)
	ctx := context.Background()
	id := record(t, s, pool)
	crash := func(context.Context, webhooks.Claim) (webhooks.Outcome, error) {
		return webhooks.Outcome{}, context.Canceled
	}
	if ran, err := attempt(ctx, s, id, 1, 200*time.Millisecond, crash); err == nil || ran {
		t.Fatalf("crashed attempt: ran=%v err=%v", ran, err)
	}
	ok := func(context.Context, webhooks.Claim) (webhooks.Outcome, error) {
		now := time.Now()
		return webhooks.Outcome{Status: webhooks.StatusSucceeded, Attempt: &webhooks.Attempt{Attempt: 1, StatusCode: 204, StartedAt: now, FinishedAt: now}}, nil
	}
	if ran, _ := attempt(ctx, s, id, 1, time.Minute, ok); ran {
		t.Fatal("the delivery was taken again during the lease")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ran, err := attempt(ctx, s, id, 1, time.Minute, ok)
		if err != nil {
			t.Fatal(err)
		}
		if ran {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease never ran out")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var status string
	var leased bool
	if err := pool.QueryRow(ctx, `SELECT status, lease_until IS NOT NULL FROM webhook_deliveries WHERE id = $1`, id).Scan(&status, &leased); err != nil {
		t.Fatal(err)
	}
	if status != webhooks.StatusSucceeded || leased {
		t.Fatalf("delivery %s (leased %v), want succeeded without a lease", status, leased)
	}
}

// TestPendingChangesWakeTheMatcher: a change committed to the outbox wakes the matcher through the
// change listener (migration 00018's triggers), once per commit; another outbox event does not.
func TestPendingChangesWakeTheMatcher(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pool, _, _ := webhookFixture(t)
	live := &sink{}
	var wakes atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- store.WatchChanges(ctx, pool.Config().ConnConfig.Copy(), slog.New(slog.NewTextHandler(io.Discard, nil)),
			store.KeyChanges(live), store.PendingChanges(func() { wakes.Add(1) }))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitFor(t, "the listener to listen", live.live.Load)

	if _, err := outbox.Enqueue(ctx, pool, outbox.Event{Subject: "webhook.delivery", Payload: []byte("job")}); err != nil {
		t.Fatal(err)
	}
	queueChange(t, pool, uuid.NewString())
	waitFor(t, "the change to wake the matcher", func() bool { return wakes.Load() >= 1 })
	queueChange(t, pool, uuid.NewString())
	waitFor(t, "the second change to wake the matcher", func() bool { return wakes.Load() >= 2 })
	if got := wakes.Load(); got != 2 {
		t.Errorf("wake-ups = %d for a job and two changes, want 2", got)
	}
}
