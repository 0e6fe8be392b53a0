package api

import "github.com/trustlayer/trustlayer/pkg/apidoc"

const billingPrefix = "/verification.v1.ReliabilityBillingService/"

// billingAnswers are the statuses this area's methods answer besides success and 401.
var billingAnswers = map[string]map[string]string{
	billingPrefix + "GetDashboard": {"200": "The dashboard page (text/html; charset=utf-8): plan and usage, held runs, repositories with their targets, latest runs, decisions and baselines"},
	billingPrefix + "CreateCheckout": {
		"201": "The hosted checkout of the team plan: send the person to url",
		"409": "already_subscribed: the workspace is on the enterprise plan, or on team with an active or past_due subscription",
		"503": "billing_not_configured (no VERIFICATION_STRIPE_* settings) or payment_processor_unavailable (Stripe failed or refused; retry later)",
	},
}

// billingPlainRoutes documents the routes of this area that no proto describes: the processor's webhook.
var billingPlainRoutes = []apidoc.Route{{
	Method: "POST", Path: BillingWebhookPath, OperationID: "ReliabilityBillingService_StripeWebhook", Tag: "ReliabilityBillingService",
	Summary: "Stripe's webhook deliveries: a completed checkout or a subscription change moves the workspace between plans",
	Description: "No bearer: the Stripe-Signature header (HMAC-SHA-256 with VERIFICATION_STRIPE_WEBHOOK_SECRET, timestamp within " +
		"VERIFICATION_STRIPE_WEBHOOK_TOLERANCE) is the credential. Each event id is applied once; a redelivery answers outcome duplicate. " +
		"Acts on checkout.session.completed and customer.subscription.created, .updated and .deleted; acknowledges the other types (outcome ignored). " +
		`The answer is {"received": true, "event_id": "evt_...", "outcome": "upgraded|downgraded|recorded|duplicate|ignored|out_of_order|other_subscription|unknown_workspace"}.`,
	Consumes: "application/json",
	Responses: map[string]string{
		"200": "Applied (or a duplicate, or a type the service does not act on)",
		"400": "invalid_signature, stale_webhook or invalid_event",
		"413": "payload_too_large: a body over 256 KiB",
		"503": "billing_not_configured, or service_unavailable: the event could not be applied now (Stripe delivers it again)",
	},
}}
