package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher is the part of JetStream the relay uses.
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// Relay moves pending outbox rows to JetStream. Several replicas may run it at once: each batch is
// claimed with FOR UPDATE SKIP LOCKED, so a row is published by one relay at a time. Order is kept
// within a batch; across replicas events may interleave, and consumers rely on event ids, not order.
type Relay struct {
	pool      *pgxpool.Pool
	js        Publisher
	subject   func(string) string
	log       *slog.Logger
	batch     int
	interval  time.Duration
	retention time.Duration
}

// RelayOption configures a Relay.
type RelayOption func(*Relay)

// WithBatchSize sets how many rows one transaction claims (default 100).
func WithBatchSize(n int) RelayOption { return func(r *Relay) { r.batch = n } }

// WithPollInterval sets how long the relay waits when nothing is pending (default 200ms).
func WithPollInterval(d time.Duration) RelayOption { return func(r *Relay) { r.interval = d } }

// WithRetention sets how long published rows are kept for inspection before pruning (default 72h).
func WithRetention(d time.Duration) RelayOption { return func(r *Relay) { r.retention = d } }

// NewRelay returns a relay publishing to js; subject maps a stored subject to the bus's namespace.
func NewRelay(pool *pgxpool.Pool, js Publisher, subject func(string) string, log *slog.Logger, opts ...RelayOption) *Relay {
	r := &Relay{pool: pool, js: js, subject: subject, log: log, batch: 100, interval: 200 * time.Millisecond, retention: 72 * time.Hour}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run relays until ctx ends. Failures (NATS down, database down) are logged and retried with a capped
// backoff; Run returns only ctx's error.
func (r *Relay) Run(ctx context.Context) error {
	backoff := r.interval
	lastPrune := time.Time{}
	for {
		n, err := r.RelayOnce(ctx)
		wait := r.interval
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			r.log.Warn("outbox relay: batch failed; will retry", "error", err, "retry_in", backoff.String())
			wait = backoff
			backoff = min(backoff*2, 5*time.Second)
		case n == r.batch:
			backoff = r.interval
			continue // more is pending
		default:
			backoff = r.interval
		}
		if time.Since(lastPrune) > time.Hour {
			if err := r.prune(ctx); err != nil {
				r.log.Warn("outbox relay: prune failed", "error", err)
			} else {
				lastPrune = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

const (
	claimPending = `SELECT id, subject, payload, headers FROM outbox
WHERE published_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`
	markPublished  = `UPDATE outbox SET published_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = ANY($1)`
	markFailed     = `UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1`
	prunePublished = `DELETE FROM outbox WHERE published_at < now() - make_interval(secs => $1)`
)

type pending struct {
	id      uuid.UUID
	subject string
	payload []byte
	headers map[string]string
}

// RelayOnce publishes one batch of pending events and returns how many it published. It stops at the
// first failed publish so that the rows after it keep their order.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	rows, err := tx.Query(ctx, claimPending, r.batch)
	if err != nil {
		return 0, fmt.Errorf("claim pending events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pending, error) {
		var p pending
		var h []byte
		if err := row.Scan(&p.id, &p.subject, &p.payload, &h); err != nil {
			return p, err
		}
		return p, json.Unmarshal(h, &p.headers)
	})
	if err != nil {
		return 0, fmt.Errorf("read pending events: %w", err)
	}
	if len(events) == 0 {
		return 0, nil
	}

	published := make([]uuid.UUID, 0, len(events))
	var publishErr error
	for _, ev := range events {
		if publishErr = r.publish(ctx, ev); publishErr != nil {
			if _, err := tx.Exec(ctx, markFailed, ev.id, publishErr.Error()); err != nil {
				return 0, fmt.Errorf("record failed publish: %w", err)
			}
			break
		}
		published = append(published, ev.id)
	}
	if len(published) > 0 {
		if _, err := tx.Exec(ctx, markPublished, published); err != nil {
			return 0, fmt.Errorf("mark published: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		// The messages went out; JetStream drops the re-publish of the next attempt by Nats-Msg-Id.
		return 0, fmt.Errorf("commit: %w", err)
	}
	if publishErr != nil {
		return len(published), fmt.Errorf("publish: %w", publishErr)
	}
	return len(published), nil
}

func (r *Relay) publish(ctx context.Context, ev pending) error {
	msg := nats.NewMsg(r.subject(ev.subject))
	msg.Data = ev.payload
	for k, v := range ev.headers {
		msg.Header.Set(k, v)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := r.js.PublishMsg(pctx, msg, jetstream.WithMsgID(ev.id.String()))
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no acknowledgement from JetStream within 5s")
	}
	return err
}

func (r *Relay) prune(ctx context.Context) error {
	_, err := r.pool.Exec(ctx, prunePublished, r.retention.Seconds())
	return err
}
