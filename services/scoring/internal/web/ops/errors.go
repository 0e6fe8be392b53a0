package ops

import (
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
)

// The operations routes' errors, in the service's {"detail": "<message>"} shape (README
// "Routes"). Bearer failures come from api.Bearer, so they read as on every other route.
var (
	errNotPrivate = apierror.New(http.StatusForbidden, "GET /metrics is answered to private-network callers only")
	errNoScope    = apierror.New(http.StatusForbidden, "This API key lacks the metrics:read scope")
	errInternal   = apierror.New(http.StatusInternalServerError, "Internal Server Error")
)

// writeError renders err: an *apierror.Error as it is, anything else as a bare 500 (the caller logs
// the cause; it never reaches the client).
func writeError(w http.ResponseWriter, err error) {
	e, ok := apierror.As(err)
	if !ok {
		e = errInternal
	}
	gateway.WriteJSON(w, e.Status, e.Body)
}
