// Package outbox implements the transactional outbox (README "Architecture"): a service writes an event
// row in the same transaction as the state change it reports, and a relay publishes pending rows to
// JetStream with Nats-Msg-Id set to the event id, so that a NATS outage delays events but never loses
// them, and a re-publish after a crash is dropped by JetStream's duplicate window.
package outbox

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/trustlayer/trustlayer/pkg/pg"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the outbox's migration set; every service that publishes events applies it.
func Migrations() pg.MigrationSet {
	return pg.EmbeddedSet("outbox", migrations, "migrations")
}

// Execer is what Enqueue needs: a pgx transaction (or pool, for an event that reports no other write).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Event is one message to publish.
type Event struct {
	// ID is the event id and the Nats-Msg-Id; consumers deduplicate by it. Zero means a new UUIDv7.
	ID uuid.UUID
	// Subject is written without the bus namespace, e.g. "policy.change.coverage_added".
	Subject string
	// Payload is the serialised message (a proto message of proto/).
	Payload []byte
	// Headers travel as NATS headers; the current trace context is added to them.
	Headers map[string]string
}

const insertEvent = `INSERT INTO outbox (id, subject, payload, headers) VALUES ($1, $2, $3, $4)`

// Enqueue writes ev inside the caller's transaction and returns its id. The event is published only if
// that transaction commits.
func Enqueue(ctx context.Context, tx Execer, ev Event) (uuid.UUID, error) {
	args, err := prepare(ctx, &ev)
	if err != nil {
		return uuid.Nil, err
	}
	if _, err := tx.Exec(ctx, insertEvent, args...); err != nil {
		return uuid.Nil, fmt.Errorf("outbox: insert event: %w", err)
	}
	return ev.ID, nil
}

// Queue adds ev's insert to a batch the caller sends inside its transaction, for use cases that write
// many rows in one round trip. It returns the event id.
func Queue(ctx context.Context, b *pgx.Batch, ev Event) (uuid.UUID, error) {
	args, err := prepare(ctx, &ev)
	if err != nil {
		return uuid.Nil, err
	}
	b.Queue(insertEvent, args...)
	return ev.ID, nil
}

// insertEvents writes many events in one statement; WITH ORDINALITY keeps their order in seq, which is
// the order the relay publishes them in.
const insertEvents = `INSERT INTO outbox (id, subject, payload, headers)
SELECT e.id, e.subject, e.payload, e.headers::jsonb
FROM unnest($1::uuid[], $2::text[], $3::bytea[], $4::text[]) WITH ORDINALITY AS e (id, subject, payload, headers, n)
ORDER BY e.n`

// QueueAll adds the insert of every event of evs, in one statement, to a batch the caller sends inside
// its transaction, and returns their ids in order. A use case that fans out into many events (one
// webhook delivery job per endpoint) sends one statement instead of one per event, which PostgreSQL
// would parse, plan and execute apart.
func QueueAll(ctx context.Context, b *pgx.Batch, evs []Event) ([]uuid.UUID, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	trace := map[string]string{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(trace))
	ids := make([]uuid.UUID, len(evs))
	subjects := make([]string, len(evs))
	payloads := make([][]byte, len(evs))
	headers := make([]string, len(evs))
	for i := range evs {
		ev := evs[i]
		if err := identify(&ev); err != nil {
			return nil, err
		}
		h, err := encodeHeaders(ev.Headers, trace)
		if err != nil {
			return nil, err
		}
		ids[i], subjects[i], payloads[i], headers[i] = ev.ID, ev.Subject, ev.Payload, string(h)
	}
	b.Queue(insertEvents, ids, subjects, payloads, headers)
	return ids, nil
}

// prepare validates ev, gives it an id when it has none, and adds the current trace context to its
// headers.
func prepare(ctx context.Context, ev *Event) ([]any, error) {
	if err := identify(ev); err != nil {
		return nil, err
	}
	trace := map[string]string{}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(trace))
	h, err := encodeHeaders(ev.Headers, trace)
	if err != nil {
		return nil, err
	}
	return []any{ev.ID, ev.Subject, ev.Payload, h}, nil
}

// identify validates ev and gives it an id when it has none.
func identify(ev *Event) error {
	if ev.Subject == "" {
		return errors.New("outbox: event without subject")
	}
	if ev.ID == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		ev.ID = id
	}
	return nil
}

// encodeHeaders merges an event's own headers with the trace context (which wins) as a JSON object.
func encodeHeaders(own, trace map[string]string) ([]byte, error) {
	headers := make(map[string]string, len(own)+len(trace))
	for k, v := range own {
		headers[k] = v
	}
	for k, v := range trace {
		headers[k] = v
	}
	return json.Marshal(headers)
}
