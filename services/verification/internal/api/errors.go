// Package api implements the verification service's gRPC servers (and so, through the gateway, its
// JSON routes): it translates between proto and the use cases and maps their errors.
package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/pg"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// Authentication failures of bearer routes: a plain-string detail, as the README's "Errors" section
// has for authentication failures.
var (
	errMissingBearer = apierror.New(http.StatusUnauthorized, "Missing bearer token")
	errInvalidBearer = apierror.New(http.StatusUnauthorized, "Invalid or revoked API key")
)

// ErrUnavailable answers a call that failed because the database cannot be reached: 503, Retry-After,
// {"detail":{"error":"service_unavailable","message":"..."}}. It is also the platform's answer for
// such errors that reach it unmapped (platform.Spec.Unavailable).
var ErrUnavailable = apierror.UnavailableCoded()

// target is what a route addresses, for the errors that name it: the code and message of its 404,
// and the server an intelligence route reads ("namespace/name").
type target struct {
	code, message string
	server        string
}

// The targets of the routes; a route that reads no single resource has none (target{}).
var (
	organizationTarget = target{code: "organization_not_found", message: "Not found"}
	apiKeyTarget       = target{code: "api_key_not_found", message: "Not found"}
	watchTarget        = target{code: "watch_not_found", message: "Not found"}
	watchPolicyTarget  = target{code: "watch_policy_not_found", message: "Not found"}
	watchKeyTarget     = target{code: "watch_api_key_not_found", message: "Not found"}
	endpointTarget     = target{code: "webhook_endpoint_not_found", message: "Not found"}
	deliveryTarget     = target{code: "webhook_delivery_not_found", message: "Not found"}
	datasetTarget      = target{code: "dataset_not_found", message: "No such dataset"}
	artifactTarget     = target{code: "artifact_not_found", message: "No such artifact"}
)

// serverTarget is the target of an intelligence route that reads one server.
func serverTarget(key intelligence.ServerKey) target { return target{server: key.String()} }

// toAPI maps a use-case error to what the client sees; t is what the route addresses. Unknown errors
// pass through: the platform turns them into a logged 500 without their cause.
func toAPI(err error, t target) error {
	var invalid *fault.ValidationError
	var exists *fault.WatchExistsError
	var targetExists *fault.TargetWatchExistsError
	var limit *fault.LimitError
	switch {
	case err == nil:
		return nil
	case pg.Unavailable(err):
		return ErrUnavailable
	case errors.As(err, &invalid):
		out := make([]apierror.Violation, 0, len(invalid.Problems))
		for _, p := range invalid.Problems {
			out = append(out, apierror.Violation{Loc: bodyLoc(p.Field), Msg: p.Message, Type: p.Type})
		}
		return apierror.Validation(out...)
	case errors.Is(err, fault.ErrBadCursor):
		return apierror.Validation(apierror.Violation{Loc: []any{"query", "cursor"},
			Msg: "Malformed cursor: pass next_cursor from the previous page", Type: "value_error"})
	case errors.Is(err, fault.ErrUnauthenticated):
		return errInvalidBearer
	case errors.As(err, &exists):
		return apierror.Coded(http.StatusConflict, "watch_already_exists",
			"This organization already watches the server", map[string]any{"watchId": exists.WatchID.String()})
	case errors.As(err, &targetExists):
		return apierror.Coded(http.StatusConflict, "watch_already_exists",
			"This organization already watches the target with this evaluator", map[string]any{"watchId": targetExists.WatchID.String()})
	case errors.Is(err, fault.ErrWatchNotActive):
		return apierror.Coded(http.StatusConflict, "watch_not_active", "The watch is paused or archived: only an active watch runs", nil)
	case errors.Is(err, fault.ErrPolicyNameExists):
		return apierror.Coded(http.StatusConflict, "watch_policy_name_exists", "This organization already has a policy of this name", nil)
	case errors.Is(err, fault.ErrPolicyInUse):
		return apierror.Coded(http.StatusConflict, "watch_policy_in_use", "A watch uses this policy: detach or archive it first", nil)
	case errors.As(err, &limit) && errors.Is(err, fault.ErrWatchLimit):
		return apierror.Coded(http.StatusForbidden, "watch_limit_reached",
			"Active watch limit reached: archive a watch first", map[string]any{"limit": limit.Limit})
	case errors.As(err, &limit) && errors.Is(err, fault.ErrEndpointLimit):
		return apierror.Coded(http.StatusForbidden, "webhook_endpoint_limit_reached",
			"Webhook endpoint limit reached: revoke an endpoint first", map[string]any{"limit": limit.Limit})
	case errors.Is(err, fault.ErrServerNotFound) && t.server != "":
		return apierror.Coded(http.StatusNotFound, "server_not_found", serverNotFound(t.server), nil)
	case errors.Is(err, fault.ErrServerNotFound):
		return apierror.Coded(http.StatusNotFound, "server_not_found", "No such server in the registry", nil)
	case errors.Is(err, fault.ErrVersionNotFound):
		return apierror.Coded(http.StatusNotFound, "version_not_found", versionNotFound(t.server), nil)
	case errors.Is(err, fault.ErrNotFound):
		return apierror.Coded(http.StatusNotFound, t.code, t.message, nil)
	case errors.Is(err, fault.ErrEndpointDisabled):
		return apierror.Coded(http.StatusConflict, "webhook_endpoint_disabled",
			"The endpoint is disabled: enable it, then replay", nil)
	case errors.Is(err, fault.ErrEndpointRevoked):
		return apierror.Coded(http.StatusConflict, "webhook_endpoint_revoked", "The endpoint is revoked", nil)
	}
	return err
}

func serverNotFound(server string) string { return "No registry lists a server named " + server }

func versionNotFound(server string) string {
	return fmt.Sprintf("No snapshot of %s has this version", server)
}

// compareItemError is the per-item error of a batch compare, which answers 200 with an error in
// place of each result that could not be computed.
func compareItemError(err error, key intelligence.ServerKey) *verificationv1.IntelligenceItemError {
	if errors.Is(err, fault.ErrVersionNotFound) {
		return &verificationv1.IntelligenceItemError{Error: "version_not_found", Message: versionNotFound(key.String())}
	}
	return &verificationv1.IntelligenceItemError{Error: "server_not_found", Message: serverNotFound(key.String())}
}

// pathID reads a UUID path parameter; anything else names nothing, so it is the target's 404.
func pathID(raw string, t target) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, apierror.Coded(http.StatusNotFound, t.code, "Not found", nil)
	}
	return id, nil
}

// queryLimit checks a limit query parameter (1..maxLimit, def when absent), with FastAPI's messages
// for its bounds.
func queryLimit(limit *int32, def, maxLimit int) (int, error) {
	switch {
	case limit == nil:
		return def, nil
	case *limit < 1:
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be greater than or equal to 1", Type: "greater_than_equal"})
	case *limit > int32(maxLimit):
		return 0, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be less than or equal to " + strconv.Itoa(maxLimit), Type: "less_than_equal"})
	}
	return int(*limit), nil
}

// bodyLoc turns a dotted field path ("endpoint_ids.2") into a FastAPI location (["body",
// "endpoint_ids", 2]); "" is the body itself.
func bodyLoc(field string) []any {
	loc := []any{"body"}
	if field == "" {
		return loc // the body as a whole
	}
	for part := range strings.SplitSeq(field, ".") {
		if n, err := strconv.Atoi(part); err == nil {
			loc = append(loc, n)
		} else {
			loc = append(loc, part)
		}
	}
	return loc
}
