package ops

import (
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

// The operations routes' own refusals, in the service's {"detail": "<message>"} shape (README
// "Routes"), written by api.WriteError like every route's. Bearer failures come from api.Bearer, so
// they read as on every other route.
var (
	errNotPrivate = apierror.New(http.StatusForbidden, "GET /metrics is answered to private-network callers only")
	errNoScope    = apierror.New(http.StatusForbidden, "This API key lacks the metrics:read scope")
)
