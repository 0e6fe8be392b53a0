package safehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestKindCodesAreStableIdentifiers(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for k := KindUnknown; k <= KindCanceled; k++ {
		c := k.Code()
		if !snake.MatchString(c) || seen[c] {
			t.Errorf("Kind %d: code %q is not a unique snake_case identifier", k, c)
		}
		seen[c] = true
	}
	if got := Kind(99).Code(); got != "unknown" {
		t.Errorf("out-of-range kind: got %q", got)
	}
}

func TestStatusErrorKeepsAnExcerptOutsideItsText(t *testing.T) {
	body := "receiver says: token=abc123 " + strings.Repeat("x", 2*ExcerptLimit)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
	_, err := c.Do(context.Background(), &Request{Method: http.MethodPost, URL: srv.URL + "/hook", Body: []byte("{}")})
	var fe *Error
	if !errors.As(err, &fe) || fe.Kind != KindStatus || fe.Status != http.StatusBadRequest {
		t.Fatalf("got %v, want a KindStatus 400 error", err)
	}
	if string(fe.Excerpt) != body[:ExcerptLimit] {
		t.Errorf("excerpt: got %d bytes, want the first %d of the body", len(fe.Excerpt), ExcerptLimit)
	}
	if strings.Contains(err.Error(), "abc123") {
		t.Errorf("the error text carries the body: %v", err)
	}
}
