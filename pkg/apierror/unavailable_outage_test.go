package apierror_test

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

func TestUnavailableAnswers(t *testing.T) {
	t.Parallel()
	plain, coded := apierror.Unavailable(), apierror.UnavailableCoded()
	if plain.Body["detail"] != apierror.UnavailableMessage || plain.Body["error"] != apierror.UnavailableCode {
		t.Errorf("Unavailable body: got %v", plain.Body)
	}
	detail, _ := coded.Body["detail"].(map[string]any)
	if detail["error"] != apierror.UnavailableCode || detail["message"] != apierror.UnavailableMessage {
		t.Errorf("UnavailableCoded body: got %v", coded.Body)
	}
	for _, e := range []*apierror.Error{plain, coded} {
		if e.Status != http.StatusServiceUnavailable || e.GRPCStatus().Code() != codes.Unavailable {
			t.Errorf("status: got %d (%s), want 503 (Unavailable)", e.Status, e.GRPCStatus().Code())
		}
		h := http.Header{}
		e.Header(h)
		if got := h.Get("Retry-After"); got != "5" {
			t.Errorf("Retry-After: got %q, want 5", got)
		}
	}
}

func TestRetryAfterSecondsRoundsUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{
		{0, ""}, {-time.Second, ""}, {time.Millisecond, "1"}, {time.Second, "1"}, {1500 * time.Millisecond, "2"}, {5 * time.Second, "5"},
	} {
		e := &apierror.Error{Status: http.StatusServiceUnavailable, RetryAfter: tc.wait}
		if got := e.RetryAfterSeconds(); got != tc.want {
			t.Errorf("RetryAfter %s: got %q, want %q", tc.wait, got, tc.want)
		}
		h := http.Header{}
		e.Header(h)
		if got := h.Get("Retry-After"); got != tc.want {
			t.Errorf("RetryAfter %s: header %q, want %q", tc.wait, got, tc.want)
		}
	}
}
