package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

// plainSchema is the plain baseline's own tables: the changes to deliver and one attempt row per
// delivery, as the service keeps (webhook_attempts), in a database of its own.
const plainSchema = `
CREATE TABLE plain_changes (
    seq          bigserial PRIMARY KEY,
    id           uuid        NOT NULL UNIQUE,
    payload      bytea       NOT NULL,
    delivered_at timestamptz
);
CREATE INDEX plain_changes_pending ON plain_changes (seq) WHERE delivered_at IS NULL;
CREATE TABLE plain_attempts (
    change_id    uuid        NOT NULL,
    endpoint     integer     NOT NULL,
    status       integer     NOT NULL,
    attempted_at timestamptz NOT NULL
);`

// plainDelivery is the baseline the fan-out is measured against: the same durable work (the change
// committed with a wake-up, one attempt row per delivery, a signed POST to each receiver, the
// change marked delivered) by plain goroutines on PostgreSQL, with no outbox relay, broker or
// delivery jobs. It runs in the bench's process, beside the receivers of both. With
// -webhook-baseline-service-records it keeps, instead of the attempt rows, the service's records of
// each change (inbox, event, deliveries, attempts) in the service's own tables.
type plainDelivery struct {
	serviceRecords bool
	pool           *pgxpool.Pool
	drop           func()
	sink           *webhookSink
	endpoints      []plainEndpoint
	client         *http.Client
	wake           chan struct{}
	stop           context.CancelFunc
	wg             sync.WaitGroup
}

type plainEndpoint struct {
	id, organization uuid.UUID // the delivery's columns, with service records
	url              string
	wh               *standardwebhooks.Webhook
}

// workersOf is the service's webhook workers as the bench configured them (its default: 64).
func workersOf(env map[string]string) int {
	if n, err := strconv.Atoi(env["VERIFICATION_WEBHOOK_WORKERS"]); err == nil && n > 0 {
		return n
	}
	return 64
}

// startPlainDelivery starts the baseline with fanout receivers and workers goroutines. Given
// migrate, it applies the service's migrations to the baseline's database and keeps the service's
// records in its webhook tables (their keys, indexes and triggers); else an attempt row per delivery.
func startPlainDelivery(ctx context.Context, adminURL string, migrate func(dbURL string) error, fanout, workers int) (*plainDelivery, error) {
	dbURL, drop, err := loadtest.TempDatabase(ctx, adminURL, "verification_whplain")
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		drop()
		return nil, err
	}
	d := &plainDelivery{serviceRecords: migrate != nil, pool: pool, drop: drop, sink: newWebhookSink(), client: loadtest.NewClient(workers*fanout, 30*time.Second),
		wake: make(chan struct{}, 1)}
	if migrate != nil {
		if err := migrate(dbURL); err != nil {
			d.close()
			return nil, err
		}
	}
	if _, err := pool.Exec(ctx, plainSchema); err != nil {
		d.close()
		return nil, err
	}
	for i := range fanout {
		secret := make([]byte, 24)
		_, _ = rand.Read(secret)
		wh, err := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString(secret))
		if err != nil {
			d.close()
			return nil, err
		}
		addr, err := d.sink.addReceiver(i, wh)
		if err != nil {
			d.close()
			return nil, err
		}
		d.endpoints = append(d.endpoints, plainEndpoint{id: uuid.New(), organization: uuid.New(), url: "http://" + addr + "/hook", wh: wh})
	}
	run, stop := context.WithCancel(context.Background())
	d.stop = stop
	d.wg.Go(func() { d.listen(run, dbURL) })
	d.wg.Go(func() { d.poll(run) })
	for range workers {
		d.wg.Go(func() { d.work(run) })
	}
	return d, nil
}

// commit commits one change and its wake-up in one statement, as the service's outbox does.
func (d *plainDelivery) commit(ctx context.Context) (string, error) {
	id := uuid.NewString()
	payload, err := json.Marshal(map[string]any{"type": "intel.change", "data": map[string]any{"change_id": id,
		"namespace": webhookServer.Namespace, "name": webhookServer.Name, "change_type": "remote_url_changed", "risk": "high"}})
	if err != nil {
		return "", err
	}
	_, err = d.pool.Exec(ctx, `WITH c AS (INSERT INTO plain_changes (id, payload) VALUES ($1, $2))
		SELECT pg_notify('plain_changes', '')`, id, payload)
	return id, err
}

// listen turns the notifications into wake-ups of the workers.
func (d *plainDelivery) listen(ctx context.Context, dbURL string) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN plain_changes"); err != nil {
		return
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		d.signal()
	}
}

// signal wakes one worker, unless one is being woken already.
func (d *plainDelivery) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// work delivers pending changes one at a time: in one transaction it takes a change, posts it to
// every endpoint at once, records an attempt per delivery and marks the change delivered. A worker
// sleeps until it is woken, as the service's matchers do: one wake-up wakes one worker, and a worker
// that takes a change wakes another, so that a burst is taken by as many workers as it needs while
// an idle baseline sends no statement (a worker woken by one that found nothing stays asleep).
func (d *plainDelivery) work(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		for ctx.Err() == nil {
			if found, err := d.deliverOne(ctx); err != nil || !found {
				break
			}
		}
	}
}

// poll wakes a worker every second, in case a notification was lost, as the service's matchers are.
func (d *plainDelivery) poll(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			d.signal()
		}
	}
}

func (d *plainDelivery) deliverOne(ctx context.Context) (bool, error) {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var id uuid.UUID
	var payload []byte
	err = tx.QueryRow(ctx, `SELECT id, payload FROM plain_changes WHERE delivered_at IS NULL
		ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id, &payload)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	d.signal() // the next change, if any, is another worker's
	started := time.Now()
	statuses := make([]int, len(d.endpoints))
	var wg sync.WaitGroup
	for i, ep := range d.endpoints {
		wg.Go(func() { statuses[i] = d.post(ctx, ep, id.String(), payload) })
	}
	wg.Wait()
	if err := d.keep(ctx, tx, id, payload, statuses, started); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `UPDATE plain_changes SET delivered_at = now() WHERE id = $1`, id); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}

// keep writes the records of a change whose POSTs got statuses (0: no answer), in tx.
func (d *plainDelivery) keep(ctx context.Context, tx pgx.Tx, id uuid.UUID, payload []byte, statuses []int, started time.Time) error {
	now := time.Now()
	if !d.serviceRecords {
		rows := make([][]any, len(statuses))
		for i, status := range statuses {
			rows[i] = []any{id, i, status, now}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"plain_attempts"}, []string{"change_id", "endpoint", "status", "attempted_at"},
			pgx.CopyFromRows(rows))
		return err
	}
	eventID := uuid.New()
	if _, err := tx.Exec(ctx, `WITH i AS (INSERT INTO webhook_inbox (change_id) VALUES ($1))
		INSERT INTO webhook_events (id, change_id, type, payload) VALUES ($2, $1, 'intel.change', $3)`, id.String(), eventID, payload); err != nil {
		return err
	}
	deliveries, attempts := make([][]any, len(statuses)), make([][]any, len(statuses))
	latency := now.Sub(started).Milliseconds()
	for i, status := range statuses {
		deliveryID, state := uuid.Must(uuid.NewV7()), "succeeded"
		if status < 200 || status > 299 {
			state = "failed"
		}
		ep := d.endpoints[i]
		deliveries[i] = []any{deliveryID, ep.organization, ep.id, eventID, state, int32(1), int32(status)}
		attempts[i] = []any{deliveryID, int32(1), int32(status), latency, started, now}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"webhook_deliveries"},
		[]string{"id", "organization_id", "endpoint_id", "event_id", "status", "attempt_count", "last_status"}, pgx.CopyFromRows(deliveries)); err != nil {
		return err
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"webhook_attempts"},
		[]string{"delivery_id", "attempt", "status_code", "latency_ms", "started_at", "finished_at"}, pgx.CopyFromRows(attempts))
	return err
}

// post sends one signed delivery and returns its status (0: no answer).
func (d *plainDelivery) post(ctx context.Context, ep plainEndpoint, id string, payload []byte) int {
	at := time.Now()
	signature, err := ep.wh.Sign(id, at, payload)
	if err != nil {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.url, bytes.NewReader(payload))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", fmt.Sprint(at.Unix()))
	req.Header.Set("webhook-signature", signature)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func (d *plainDelivery) close() {
	if d.stop != nil {
		d.stop()
		d.wg.Wait()
	}
	d.sink.close()
	d.pool.Close()
	d.drop()
}
