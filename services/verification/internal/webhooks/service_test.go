package webhooks

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

func testService() *Service {
	return NewService(nil, nil, Config{
		MaxAttempts: 3, RetryBase: time.Second, RetryMax: time.Minute, DisableAfter: 5, Timeout: time.Second,
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")},
	})
}

func TestCheckURL(t *testing.T) {
	s := testService()
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://hooks.example.com/in?token=x", true},
		{"https://10.20.1.2/in", true},
		{"http://10.20.1.2:8080/in", true},
		{"http://hooks.example.com/in", false},
		{"http://10.30.1.2/in", false},
		{"https://10.30.1.2/in", false},
		{"https://127.0.0.1/in", false},
		{"https://[::1]/in", false},
		{"https://169.254.169.254/", false},
		{"https://metadata.google.internal/", false},
		{"https://u:p@hooks.example.com/", false},
		{"https://hooks.example.com/#x", false},
		{"hooks.example.com/in", false},
		{"https://vault.internal:8200/", false},
		{"https://printer.local/", false},
		{"https://corp/", false},
		{"https://hooks.example.com:6379/", false},
		{"https://hooks.example.com:443/in", true},
		{"https://93.184.216.34/in", true},
		{"", false},
	} {
		msg := s.checkURL(tc.url)
		if (msg == "") != tc.ok {
			t.Errorf("checkURL(%q) = %q, want ok=%v", tc.url, msg, tc.ok)
		}
		if strings.Contains(msg, "safehttp") {
			t.Errorf("checkURL(%q) = %q: leaks the package prefix", tc.url, msg)
		}
	}
}

func TestJudge(t *testing.T) {
	s := testService()
	s.jitter = func() float64 { return 0 }
	done := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := Attempt{FinishedAt: done}
	status := func(code int) error { return &safehttp.Error{Kind: safehttp.KindStatus, Status: code} }
	for _, tc := range []struct {
		name    string
		attempt int
		err     error
		status  string
		reason  string
		effect  EndpointEffect
		next    time.Time
	}{
		{"2xx", 1, nil, StatusSucceeded, "", EndpointEffect{Succeeded: true}, time.Time{}},
		{"410 stops at once", 1, status(http.StatusGone), StatusFailed, ReasonEndpointGone, EndpointEffect{Gone: true}, time.Time{}},
		{"500 is retried", 1, status(500), StatusPending, "", EndpointEffect{}, done.Add(500 * time.Millisecond)},
		{"timeouts are retried", 2, &safehttp.Error{Kind: safehttp.KindTimeout}, StatusPending, "", EndpointEffect{}, done.Add(2 * time.Second)},
		{"last attempt exhausts", 3, status(500), StatusExhausted, "", EndpointEffect{Exhausted: true, DisableAfter: 5}, time.Time{}},
		{"Retry-After is honoured", 1, &safehttp.Error{Kind: safehttp.KindStatus, Status: 429, RetryAfter: 30 * time.Second}, StatusPending, "", EndpointEffect{}, done.Add(30 * time.Second)},
		{"other errors are retried", 1, errors.New("boom"), StatusPending, "", EndpointEffect{}, done.Add(500 * time.Millisecond)},
	} {
		out := s.judge(tc.attempt, rec, tc.err)
		if out.Status != tc.status || out.FailureReason != tc.reason || out.Endpoint != tc.effect || !out.NextAttemptAt.Equal(tc.next) || out.Attempt == nil {
			t.Errorf("%s: outcome %+v, want %s %q %+v next %s", tc.name, out, tc.status, tc.reason, tc.effect, tc.next)
		}
	}
}

func TestEventBody(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	ev, err := newEvent(Change{ID: "c1", Namespace: "io.github.acme", Name: "weather", ChangeType: "remote_url_changed",
		Risk: "high", OldValue: "a", NewValue: "b", DetectedAt: at}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(ev.Payload, &body); err != nil {
		t.Fatal(err)
	}
	data := body["data"].(map[string]any)
	if body["type"] != "intel.change" || body["id"] != ev.ID.String() || body["timestamp"] != "2026-03-04T04:06:07Z" ||
		data["change_id"] != "c1" || data["namespace"] != "io.github.acme" || data["risk"] != "high" || data["new_value"] != "b" {
		t.Fatalf("body = %s", ev.Payload)
	}
	for _, k := range []string{"from_version", "to_version", "summary", "field", "old_value", "detected_at", "name", "change_type"} {
		if _, ok := data[k]; !ok {
			t.Errorf("data lacks %s", k)
		}
	}
}

func TestReadExcerpt(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes: the cut must not split a rune
	got := readExcerpt(nopCloser{strings.NewReader(long + "\x00")})
	if len(got) > excerptLimit || !strings.HasPrefix(long, got) || len(got) < excerptLimit-1 {
		t.Fatalf("excerpt of %d bytes, want the first ~1 KiB on a rune boundary", len(got))
	}
	if got := readExcerpt(nopCloser{strings.NewReader("ok\x00\xff")}); got != "ok\uFFFD" {
		t.Errorf("excerpt %q: want NUL dropped and invalid UTF-8 replaced", got)
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
