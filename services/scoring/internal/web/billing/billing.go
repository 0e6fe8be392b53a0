// Package billing serves the billing routes that are plain HTTP handlers rather than gateway routes
// (README "Billing"): the payment processor's webhook, whose signature covers the raw body; the
// address the hosted checkout returns the customer to; and the 402's upgrade_url opened as a link.
// Their errors are answered by api.WriteError, so that they read as on the gateway routes.
package billing

import (
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
)

// maxWebhookBody bounds a webhook delivery. Stripe's events are a few kilobytes (a subscription with
// its items is the largest we handle); 1 MiB leaves room without letting a caller hold memory.
const maxWebhookBody = 1 << 20

// Webhook is POST /v1/billing/webhook, the payment processor's webhook. It is a plain handler,
// not a gateway route, because the signature covers the raw body byte for byte; the signature is its
// only authentication. Answers: 200 {received, event_id, outcome} for an applied, duplicate or
// ignored event (the processor stops retrying); 400 for a bad or stale signature or an unreadable
// event; 503 when billing is not configured; 500 when the database failed (the processor retries).
func Webhook(b *billing.Service, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				gateway.WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"detail": "Webhook body too large"})
				return
			}
			gateway.WriteJSON(w, http.StatusBadRequest, map[string]any{"detail": "Could not read the webhook body"})
			return
		}
		applied, err := b.HandleWebhook(r.Context(), payload, r.Header.Get("Stripe-Signature"))
		if err != nil {
			if e, known := api.WriteError(w, r, err); known {
				log.WarnContext(r.Context(), "billing: webhook refused", "status", e.Status, "reason", err.Error())
			} else if r.Context().Err() == nil {
				log.ErrorContext(r.Context(), "billing: webhook failed", "error", err)
			}
			return
		}
		gateway.WriteJSON(w, http.StatusOK, map[string]any{"received": true, "event_id": applied.EventID, "outcome": string(applied.Outcome)})
	})
}

// CheckoutReturn is GET /v1/billing/checkout/return, where the hosted checkout sends the customer
// back when no SCORING_STRIPE_SUCCESS_URL / CANCEL_URL is set. It says what happens next; it changes
// nothing (the webhook upgrades the account).
func CheckoutReturn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("result") == "success" {
			gateway.WriteJSON(w, http.StatusOK, map[string]any{"status": "complete",
				"detail": "Payment received: the same API key moves to the paid plan within seconds of the processor's confirmation"})
			return
		}
		gateway.WriteJSON(w, http.StatusOK, map[string]any{"status": "cancelled",
			"detail": "Checkout cancelled: the key stays on the trial plan; POST /v1/billing/checkout-session opens a new checkout"})
	})
}

// CheckoutPage is GET /v1/billing/checkout-session, the upgrade_url of a 402 opened as a link. A
// request with the trial key as bearer (or x-service-api-key) is sent on to a new hosted checkout: 303
// See Other to its url, as POST /v1/billing/checkout-session would open it (and with its refusals). A
// browser, which has no key to send, gets a page that asks for the key and opens the checkout with it
// through that POST; the key never goes into a URL.
func CheckoutPage(b *billing.Service, creds api.Credentials) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" && r.Header.Get("X-Service-Api-Key") == "" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = io.WriteString(w, checkoutPage)
			return
		}
		key, err := api.Bearer(r.Context(), creds, r.Header.Values)
		if err == nil {
			var sess billing.Session
			if sess, err = b.CheckoutForKey(r.Context(), key); err == nil {
				http.Redirect(w, r, sess.URL, http.StatusSeeOther)
				return
			}
		}
		api.WriteError(w, r, err)
	})
}

// checkoutPage asks for the trial key and opens its checkout with POST /v1/billing/checkout-session.
const checkoutPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Upgrade to the paid plan</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>Upgrade to the paid plan</h1>
<p>Your trial key moves to the paid plan in place: the same key keeps working, without the monthly quota.
Enter it to open the secure checkout.</p>
<form id="checkout">
<label>Trial API key <input name="key" type="password" autocomplete="off" required></label>
<button type="submit">Open checkout</button>
</form>
<p id="error" role="alert"></p>
<script>
document.getElementById("checkout").addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = new FormData(event.target).get("key").trim();
  const answer = await fetch("/v1/billing/checkout-session", {method: "POST", headers: {"Authorization": "Bearer " + key}});
  const body = await answer.json();
  if (answer.ok) { window.location.assign(body.url); return; }
  document.getElementById("error").textContent = body.detail;
});
</script>
</body>
</html>
`
