package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// intelToAPI maps an intelligence use-case error to what the client sees; key names the server the
// request addressed. Unknown errors pass through; the platform turns them into a logged 500 without
// their cause.
func intelToAPI(err error, key intelligence.ServerKey) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, intelligence.ErrServerNotFound):
		return apierror.Coded(http.StatusNotFound, "server_not_found", fmt.Sprintf("No registry lists a server named %s", key), nil)
	case errors.Is(err, intelligence.ErrVersionNotFound):
		return apierror.Coded(http.StatusNotFound, "version_not_found", fmt.Sprintf("No snapshot of %s has this version", key), nil)
	case errors.Is(err, intelligence.ErrBadCursor):
		return apierror.Validation(apierror.Violation{Loc: []any{"query", "cursor"},
			Msg: "Malformed cursor: pass next_cursor from the previous page", Type: "value_error"})
	}
	return err
}

// intelItemError is the per-item error of a batch compare.
func intelItemError(err error, key intelligence.ServerKey) *verificationv1.IntelligenceItemError {
	if errors.Is(err, intelligence.ErrVersionNotFound) {
		return &verificationv1.IntelligenceItemError{Error: "version_not_found", Message: fmt.Sprintf("No snapshot of %s has this version", key)}
	}
	return &verificationv1.IntelligenceItemError{Error: "server_not_found", Message: fmt.Sprintf("No registry lists a server named %s", key)}
}

// intelLimit is a list route's page-size bounds: 1..max, def when absent.
type intelLimit struct{ def, max int32 }

// page validates the limit the way FastAPI's Query(ge=1, le=max) does, with its messages.
func (l intelLimit) page(limit *int32, cursor string) (intelligence.Page, error) {
	p := intelligence.Page{Limit: int(l.def), Cursor: cursor}
	if limit == nil {
		return p, nil
	}
	switch {
	case *limit < 1:
		return p, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: "Input should be greater than or equal to 1", Type: "greater_than_equal"})
	case *limit > l.max:
		return p, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"},
			Msg: fmt.Sprintf("Input should be less than or equal to %d", l.max), Type: "less_than_equal"})
	}
	p.Limit = int(*limit)
	return p, nil
}

// intelMissingQuery is FastAPI's answer to absent required query parameters.
func intelMissingQuery(names ...string) error {
	out := make([]apierror.Violation, 0, len(names))
	for _, n := range names {
		out = append(out, apierror.Violation{Loc: []any{"query", n}, Msg: "Field required", Type: "missing"})
	}
	return apierror.Validation(out...)
}

// intelCompareItems validates a batch compare body: 1..intelligence.MaxCompareItems items, each with a
// namespace and a name.
func intelCompareItems(in []*verificationv1.IntelligenceCompareItem) ([]intelligence.CompareItem, error) {
	switch {
	case len(in) == 0:
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"body", "items"},
			Msg: "List should have at least 1 item after validation, not 0", Type: "too_short"})
	case len(in) > intelligence.MaxCompareItems:
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"body", "items"},
			Msg: fmt.Sprintf("List should have at most %d items after validation, not %d", intelligence.MaxCompareItems, len(in)), Type: "too_long"})
	}
	var problems []apierror.Violation
	out := make([]intelligence.CompareItem, 0, len(in))
	for i, it := range in {
		if it.GetNamespace() == "" {
			problems = append(problems, apierror.Violation{Loc: []any{"body", "items", i, "namespace"}, Msg: "Field required", Type: "missing"})
		}
		if it.GetName() == "" {
			problems = append(problems, apierror.Violation{Loc: []any{"body", "items", i, "name"}, Msg: "Field required", Type: "missing"})
		}
		out = append(out, intelligence.CompareItem{Key: intelligence.ServerKey{Namespace: it.GetNamespace(), Name: it.GetName()}, From: it.GetFrom(), To: it.GetTo()})
	}
	if len(problems) > 0 {
		return nil, apierror.Validation(problems...)
	}
	return out, nil
}
