package api

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Not-found codes of the webhook routes.
const (
	codeWatchNotFound    = "watch_not_found"
	codeEndpointNotFound = "webhook_endpoint_not_found"
	codeDeliveryNotFound = "webhook_delivery_not_found"
)

// webhookError maps the webhook use cases' errors to what the client sees; notFound is the code of a
// 404 for the route's resource. Other errors pass through: the platform logs them and answers 500
// without their cause.
func webhookError(err error, notFound string) error {
	var invalid *webhooks.ValidationError
	var exists *webhooks.WatchExistsError
	var limit *webhooks.LimitError
	switch {
	case errors.As(err, &invalid):
		out := make([]apierror.Violation, 0, len(invalid.Problems))
		for _, p := range invalid.Problems {
			out = append(out, apierror.Violation{Loc: bodyLoc(p.Field), Msg: p.Message, Type: p.Type})
		}
		return apierror.Validation(out...)
	case errors.As(err, &exists):
		return apierror.Coded(http.StatusConflict, "watch_already_exists",
			"This organization already watches the server", map[string]any{"watchId": exists.WatchID.String()})
	case errors.As(err, &limit) && errors.Is(err, webhooks.ErrWatchLimit):
		return apierror.Coded(http.StatusForbidden, "watch_limit_reached",
			"Active watch limit reached: archive a watch first", map[string]any{"limit": limit.Limit})
	case errors.As(err, &limit) && errors.Is(err, webhooks.ErrEndpointLimit):
		return apierror.Coded(http.StatusForbidden, "webhook_endpoint_limit_reached",
			"Webhook endpoint limit reached: revoke an endpoint first", map[string]any{"limit": limit.Limit})
	case errors.Is(err, webhooks.ErrServerNotFound):
		return apierror.Coded(http.StatusNotFound, "server_not_found", "No such server in the registry", nil)
	case errors.Is(err, webhooks.ErrNotFound):
		return apierror.Coded(http.StatusNotFound, notFound, "Not found", nil)
	case errors.Is(err, webhooks.ErrEndpointDisabled):
		return apierror.Coded(http.StatusConflict, "webhook_endpoint_disabled",
			"The endpoint is disabled: enable it, then replay", nil)
	case errors.Is(err, webhooks.ErrEndpointRevoked):
		return apierror.Coded(http.StatusConflict, "webhook_endpoint_revoked", "The endpoint is revoked", nil)
	case errors.Is(err, webhooks.ErrBadCursor):
		return apierror.Validation(apierror.Violation{Loc: []any{"query", "cursor"},
			Msg: "Malformed cursor: pass next_cursor from the previous page", Type: "value_error"})
	}
	return err
}

// bodyLoc turns a dotted field path ("endpoint_ids.2") into a FastAPI location (["body",
// "endpoint_ids", 2]).
func bodyLoc(field string) []any {
	loc := []any{"body"}
	for part := range strings.SplitSeq(field, ".") {
		if n, err := strconv.Atoi(part); err == nil {
			loc = append(loc, n)
		} else {
			loc = append(loc, part)
		}
	}
	return loc
}

// deliveryLimit checks the limit query parameter of a delivery listing (1..100, default 20), with
// FastAPI's messages for its bounds.
func deliveryLimit(limit *int32) (int, error) {
	switch {
	case limit == nil:
		return webhooks.DefaultDeliveryLimit, nil
	case *limit < 1:
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be greater than or equal to 1", Type: "greater_than_equal"})
	case *limit > webhooks.MaxDeliveryLimit:
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be less than or equal to 100", Type: "less_than_equal"})
	}
	return int(*limit), nil
}
