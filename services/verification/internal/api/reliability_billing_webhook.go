package api

import (
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

// BillingWebhookPath is the route of the processor's webhook deliveries.
const BillingWebhookPath = "/v1/agent-reliability/billing/webhook"

// maxBillingWebhookBody bounds a delivery: Stripe's events of checkout sessions and subscriptions
// are a few KiB; 256 KiB leaves room for many subscription items and metadata.
const maxBillingWebhookBody = 256 << 10

// BillingWebhook is POST /v1/agent-reliability/billing/webhook: the processor's signed deliveries,
// verified (Stripe-Signature) and applied once each. It takes no bearer: the signature is the
// credential. Answers: 200 {"received": true, "event_id", "outcome"}; 400 a bad signature, a stale
// timestamp or an unreadable event; 413 a body over 256 KiB; 503 billing not configured, or the
// event could not be applied now (the processor delivers it again).
func BillingWebhook(svc *billing.Service, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBillingWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeBillingError(w, apierror.Coded(http.StatusRequestEntityTooLarge, "payload_too_large", "The webhook body is over 256 KiB", nil))
				return
			}
			writeBillingError(w, apierror.Coded(http.StatusBadRequest, "invalid_event", "Could not read the webhook body", nil))
			return
		}
		applied, err := svc.HandleWebhook(r.Context(), payload, r.Header.Get("Stripe-Signature"))
		if err != nil {
			if e, ok := apierror.As(billingToAPI(err)); ok && (e.Status == http.StatusBadRequest || errors.Is(err, billing.ErrNotConfigured)) {
				log.WarnContext(r.Context(), "reliability billing: webhook refused", "status", e.Status, "reason", err.Error())
				writeBillingError(w, e)
				return
			}
			if r.Context().Err() == nil {
				log.ErrorContext(r.Context(), "reliability billing: webhook failed", "error", err)
			}
			writeBillingError(w, apierror.UnavailableCoded())
			return
		}
		gateway.WriteJSON(w, http.StatusOK, map[string]any{"received": true, "event_id": applied.EventID, "outcome": string(applied.Outcome)})
	})
}

func writeBillingError(w http.ResponseWriter, e *apierror.Error) {
	e.Header(w.Header())
	gateway.WriteJSON(w, e.Status, e.Body)
}
