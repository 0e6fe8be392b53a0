package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/text/language"
	textmessage "golang.org/x/text/message"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Every error body of this service is {"detail": "<message>"} (Document 2 "Errors"); 402 adds
// upgrade_url and a validation 422 adds the structured errors.
var (
	errMissingBearer = apierror.New(http.StatusUnauthorized, "Missing bearer token")
	errInvalidBearer = apierror.New(http.StatusUnauthorized, "Invalid or revoked API key")
)

// grouped writes numbers as the messages' English does: 1,000.
var grouped = textmessage.NewPrinter(language.English)

// toAPI maps a domain error to its documented status and body. Errors it does not know are returned
// unchanged: the platform's interceptor turns them into a 500 whose cause stays in the log.
func toAPI(err error, upgradeURL string) error {
	var fieldErrs claim.Errors
	var limit *meter.LimitError
	switch {
	case errors.As(err, &fieldErrs):
		return validationError(fieldErrs)
	case errors.Is(err, decision.ErrPinUnavailable):
		return apierror.New(http.StatusConflict, message(err, decision.ErrPinUnavailable))
	case errors.Is(err, decision.ErrInvalidOption), errors.Is(err, keys.ErrInvalid), errors.Is(err, feedback.ErrInvalid):
		return apierror.New(http.StatusUnprocessableEntity, message(err, decision.ErrInvalidOption, keys.ErrInvalid, feedback.ErrInvalid))
	case errors.As(err, &limit) && errors.Is(err, meter.ErrQuotaExhausted):
		calls := grouped.Sprintf("%d", limit.Included)
		body := map[string]any{
			"detail":      "Trial quota of " + calls + " scoring calls this month is exhausted; upgrade to a paid plan to continue",
			"error":       "quota_exhausted",
			"upgrade_url": upgradeURL,
		}
		if limit.Remaining > 0 {
			// A batch larger than what is left: the quota is not used up, and fewer items would pass.
			body["detail"] = fmt.Sprintf("This request needs %d scoring calls and the trial has %d of its %s calls left this month; send at most %d items or upgrade to a paid plan",
				limit.Needed, limit.Remaining, calls, limit.Remaining)
			body["remaining_calls"] = limit.Remaining
		}
		return &apierror.Error{Status: http.StatusPaymentRequired, Body: body}
	case errors.As(err, &limit) || errors.Is(err, meter.ErrRateLimited) || errors.Is(err, meter.ErrInFlight):
		detail := "Rate limit exceeded for this key"
		if errors.Is(err, meter.ErrInFlight) {
			detail = "Too many scoring requests in flight for this key"
		}
		body := map[string]any{"detail": detail}
		if limit != nil && limit.RetryAfter > 0 {
			body["retry_after_seconds"] = limit.RetryAfter.Round(time.Millisecond).Seconds()
		}
		return &apierror.Error{Status: http.StatusTooManyRequests, Body: body}
	}
	return err
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
