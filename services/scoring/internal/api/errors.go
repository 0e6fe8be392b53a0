package api

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"
	textmessage "golang.org/x/text/message"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Every error body of this service is {"detail": "<message>"} (README "Errors"); 402 adds
// upgrade_url and a validation 422 adds the structured errors. The refusals of a credential are the
// same on every route and on /mcp (internal/web/mcp).
var (
	// ErrMissingBearer answers a bearer route called without a token.
	ErrMissingBearer = apierror.New(http.StatusUnauthorized, "Missing bearer token")
	// ErrInvalidBearer answers a token that is unknown, malformed, expired or revoked.
	ErrInvalidBearer  = apierror.New(http.StatusUnauthorized, "Invalid or revoked API key")
	errSessionMissing = apierror.New(http.StatusUnauthorized, "Missing workspace session (Authorization: Bearer <session_token> from /v1/control-plane/auth/login)")
	errSessionInvalid = apierror.New(http.StatusUnauthorized, "Invalid or expired workspace session")
)

// ErrUnavailable answers a call that failed because the database cannot be reached: 503 with
// Retry-After and {"detail": "...", "error": "service_unavailable"}, the stable code beside the detail
// as the 402 carries its own. It is also the platform's answer for such errors that reach it
// unmapped (platform.Spec.Unavailable).
var ErrUnavailable = apierror.Unavailable()

// errInternal answers an error no case of toAPI knows; its cause stays in the log.
var errInternal = apierror.New(http.StatusInternalServerError, "Internal Server Error")

// WriteError answers the failure of a plain handler (internal/web) as the gateway answers a method's:
// err as toAPI maps it, or a bare 500 for an error no case knows. It returns the answer and whether
// a case knew err, so that the handler logs an unknown cause, which never reaches the client.
func WriteError(w http.ResponseWriter, r *http.Request, err error) (*apierror.Error, bool) {
	e, known := apierror.As(toAPI(r.Context(), err))
	if !known {
		e = errInternal
	}
	e.Header(w.Header())
	gateway.WriteJSON(w, e.Status, e.Body)
	return e, known
}

// grouped writes numbers as the messages' English does: 1,000.
var grouped = textmessage.NewPrinter(language.English)

// toAPI maps a use-case error to its documented status and body; a refusal with a known wait also
// sets the call's Retry-After. Errors it does not know are returned unchanged: the platform's
// interceptor turns them into a 500 whose cause stays in the log.
func toAPI(ctx context.Context, err error) error {
	var fieldErrs claim.Errors
	var limit *meter.LimitError
	var throttled *controlplane.ThrottledError
	switch {
	case err == nil:
		return nil
	case pg.Unavailable(err) && ctx.Err() == nil:
		return ErrUnavailable
	case errors.As(err, &fieldErrs):
		return validationError(fieldErrs)
	case errors.Is(err, fault.ErrInvalid), errors.Is(err, controlplane.ErrWeakPassword):
		return apierror.New(http.StatusUnprocessableEntity, message(err, fault.ErrInvalid, controlplane.ErrWeakPassword))
	case errors.Is(err, fault.ErrNotFound):
		if msg := message(err, fault.ErrNotFound); msg != fault.ErrNotFound.Error() {
			return apierror.New(http.StatusNotFound, msg)
		}
		return apierror.New(http.StatusNotFound, "Not Found")
	case errors.Is(err, decision.ErrPinUnavailable):
		return apierror.New(http.StatusConflict, message(err, decision.ErrPinUnavailable))
	case errors.As(err, &limit):
		setRetryAfter(ctx, limit.RetryAfter)
		return limitError(limit)
	case errors.As(err, &throttled):
		secs := setRetryAfter(ctx, throttled.RetryAfter)
		return &apierror.Error{Status: http.StatusTooManyRequests, Body: map[string]any{
			"detail":              "Too many failed sign-in attempts; try again later",
			"retry_after_seconds": secs,
		}}
	case errors.Is(err, keys.ErrUnauthenticated):
		return ErrInvalidBearer
	case errors.Is(err, controlplane.ErrUnauthenticated):
		return errSessionInvalid
	case errors.Is(err, controlplane.ErrBadCredentials):
		return apierror.New(http.StatusUnauthorized, "invalid email or password")
	case errors.Is(err, controlplane.ErrEmailTaken):
		return apierror.New(http.StatusConflict, "an account with this email already exists; log in with its password")
	case errors.Is(err, keys.ErrTooMany):
		return apierror.Newf(http.StatusConflict, "this workspace has %d live API keys; revoke one first", controlplane.MaxActiveKeys)
	case errors.Is(err, controlplane.ErrGone):
		return apierror.New(http.StatusGone, message(err, controlplane.ErrGone))
	case errors.Is(err, billing.ErrNotConfigured):
		return apierror.New(http.StatusServiceUnavailable, "Billing is not configured on this deployment (no payment processor settings); contact the operator")
	case errors.Is(err, billing.ErrProcessor):
		return apierror.New(http.StatusBadGateway, "The payment processor could not open a checkout session; try again later")
	case errors.Is(err, billing.ErrKeyNotTrial):
		return apierror.New(http.StatusForbidden, message(err, billing.ErrKeyNotTrial)+": checkout upgrades trial keys only")
	case errors.Is(err, billing.ErrNotTrial):
		return apierror.New(http.StatusConflict, "The account "+message(err, billing.ErrNotTrial)+"; checkout upgrades trial accounts only")
	case errors.Is(err, billing.ErrSignature):
		return apierror.New(http.StatusBadRequest, "Invalid webhook signature")
	case errors.Is(err, billing.ErrStale):
		return apierror.New(http.StatusBadRequest, "Webhook timestamp is outside the tolerance (a replayed or delayed delivery)")
	case errors.Is(err, billing.ErrInvalidEvent):
		return apierror.New(http.StatusBadRequest, "Unreadable webhook event: "+message(err, billing.ErrInvalidEvent))
	}
	return err
}

// limitError is the 402 of a trial past its quota, or the 429 of a key over its rate or its requests
// in flight.
func limitError(limit *meter.LimitError) *apierror.Error {
	if errors.Is(limit, meter.ErrQuotaExhausted) {
		calls := grouped.Sprintf("%d", limit.Included)
		body := map[string]any{
			"detail":      "Trial quota of " + calls + " scoring calls this month is exhausted; upgrade to a paid plan to continue",
			"error":       "quota_exhausted",
			"upgrade_url": limit.UpgradeURL,
		}
		if limit.Remaining > 0 {
			// A batch larger than what is left: the quota is not used up, and fewer items would pass.
			body["detail"] = fmt.Sprintf("This request needs %d scoring calls and the trial has %d of its %s calls left this month; send at most %d items or upgrade to a paid plan",
				limit.Needed, limit.Remaining, calls, limit.Remaining)
			body["remaining_calls"] = limit.Remaining
		}
		return &apierror.Error{Status: http.StatusPaymentRequired, Body: body}
	}
	detail := "Rate limit exceeded for this key"
	if errors.Is(limit, meter.ErrInFlight) {
		detail = "Too many scoring requests in flight for this key"
	}
	body := map[string]any{"detail": detail}
	if limit.RetryAfter > 0 {
		body["retry_after_seconds"] = limit.RetryAfter.Round(time.Millisecond).Seconds()
	}
	return &apierror.Error{Status: http.StatusTooManyRequests, Body: body}
}

// setRetryAfter sets the call's Retry-After (RFC 9110 section 10.2.3) to wait rounded up to whole
// seconds, unless wait is unknown (zero), and returns those seconds.
func setRetryAfter(ctx context.Context, wait time.Duration) int {
	secs := int(math.Ceil(wait.Seconds()))
	if wait > 0 {
		_ = grpc.SetHeader(ctx, metadata.Pairs("retry-after", strconv.Itoa(secs)))
	}
	return secs
}

// validationError is a 422 whose detail names every field and rule, with the structured list beside it.
func validationError(errs claim.Errors) *apierror.Error {
	list := make([]any, len(errs))
	for i, e := range errs {
		list[i] = map[string]any{"field": e.Field, "rule": e.Rule, "message": e.Message}
	}
	return &apierror.Error{Status: http.StatusUnprocessableEntity, Body: map[string]any{"detail": errs.Error(), "errors": list}}
}

// message strips a sentinel's own text from err, leaving the sentence written for the caller.
func message(err error, sentinels ...error) string {
	msg := err.Error()
	for _, s := range sentinels {
		msg = strings.TrimPrefix(msg, s.Error()+": ")
	}
	return msg
}
