// Package outbox implements the transactional outbox of DESIGN.md "Events": a service writes an event
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

// prepare validates ev, gives it an id when it has none, and adds the current trace context to its
// headers.
func prepare(ctx context.Context, ev *Event) ([]any, error) {
	if ev.Subject == "" {
		return nil, errors.New("outbox: event without subject")
	}
	if ev.ID == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		ev.ID = id
	}
	headers := map[string]string{}
	for k, v := range ev.Headers {
		headers[k] = v
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.MapCarrier(headers))
	h, err := json.Marshal(headers)
	if err != nil {
		return nil, err
	}
	return []any{ev.ID, ev.Subject, ev.Payload, h}, nil
}
