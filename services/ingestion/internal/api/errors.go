// Package api implements the ingestion service's gRPC servers (and so, through the gateway, its JSON
// routes): it translates between proto and the ingest use cases and maps their errors in one place.
package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/store"
)

// toAPI maps a use-case error to what the client sees. Unknown errors pass through; the platform turns
// them into a logged 500 without their cause, or into its 503 when the database cannot be reached.
func toAPI(err error) error {
	var v *ingest.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &v):
		out := make([]apierror.Violation, 0, len(v.Problems))
		for _, p := range v.Problems {
			loc := []any{"body"}
			for _, part := range strings.Split(p.Field, ".") {
				loc = append(loc, part)
			}
			if p.Field == "status" {
				loc = []any{"query", "status"}
			}
			out = append(out, apierror.Violation{Loc: loc, Msg: p.Message, Type: p.Type})
		}
		return apierror.Validation(out...)
	case errors.Is(err, store.ErrBadCursor):
		return apierror.Validation(apierror.Violation{Loc: []any{"query", "cursor"}, Msg: "Malformed cursor: pass next_cursor from the previous page", Type: "value_error"})
	case errors.Is(err, ingest.ErrNotFound):
		return apierror.New(http.StatusNotFound, "Not Found")
	case errors.Is(err, ingest.ErrRunInProgress), errors.Is(err, ingest.ErrTermsNotApproved):
		return apierror.New(http.StatusConflict, err.Error())
	}
	return err
}

// parseID reads a path id; anything but a UUID is a 404, since no such resource can exist.
func parseID(raw string) (uuid.UUID, error) {
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, apierror.New(http.StatusNotFound, "Not Found")
	}
	return id, nil
}

// pageOf validates paging parameters: limit 1..100 (default 50).
func pageOf(limit *int32, cursor string) (ingest.Page, error) {
	p := ingest.Page{Cursor: cursor}
	if limit != nil {
		if *limit < 1 || *limit > store.MaxLimit {
			return p, apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"}, Msg: "Input should be between 1 and 100", Type: "value_error"})
		}
		p.Limit = int(*limit)
	}
	return p, nil
}

// listPage reads the page a list request asks for, lists it with list and converts its items; a
// page with no items converts to an empty list, which the JSON shows as [].
func listPage[T, P any](limit *int32, cursor string, list func(ingest.Page) ([]T, string, error), convert func(T) P) ([]P, string, error) {
	page, err := pageOf(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	items, next, err := list(page)
	if err != nil {
		return nil, "", toAPI(err)
	}
	out := make([]P, 0, len(items))
	for _, it := range items {
		out = append(out, convert(it))
	}
	return out, next, nil
}
