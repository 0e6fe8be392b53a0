// Package store is the verification service's PostgreSQL persistence (pgx) and its embedded
// migrations: SQL only. It returns the service's fault sentinels for what it does not find, and
// writes the outbox rows of the events it announces through Events, in the transaction of the rows
// they announce.
package store

import (
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Events encodes the events the store commits to the outbox (internal/events implements it), so that
// the store knows neither their subjects nor their encoding.
type Events interface {
	// IntelChange is the event of a classified registry change.
	IntelChange(c intelligence.Change) (outbox.Event, error)
	// DeliveryJob is the job of attempt number attempt of a webhook delivery.
	DeliveryJob(deliveryID uuid.UUID, attempt int) (outbox.Event, error)
	// Change reads back the payload of an IntelChange event, as the webhook matcher's queue keeps it.
	Change(payload []byte) (webhooks.Change, error)
}

// noRows returns sentinel when err is pgx's "no rows", and err otherwise.
func noRows(err, sentinel error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return sentinel
	}
	return err
}
