package browsertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/browsertest"
)

func TestBrowserScreenshotEvalText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>t</title><body style="background:#fff"><h1 id="h" style="color:#c00">Hello</h1>` +
			`<script>document.body.dataset.ran = "yes"; alert("opened");</script></body>`))
	}))
	defer srv.Close()
	b := browsertest.NewBrowser(t)
	shot := b.Screenshot(t, srv.URL)
	b.CheckScreenshot(t, shot)
	if got := b.Text(t, "#h"); got != "Hello" {
		t.Errorf("Text: got %q, want Hello", got)
	}
	if ran := browsertest.Eval[string](t, b, `document.body.dataset.ran`); ran != "yes" {
		t.Errorf("Eval: got %q, want yes", ran)
	}
	if d := b.Dialogs(); len(d) != 1 || d[0] != "opened" {
		t.Errorf("Dialogs: got %q, want [opened]", d)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends the goroutine, as
// testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestNewBrowserWithoutChromiumFailsPointingAtDeps(t *testing.T) {
	t.Setenv("CHROMIUM_PATH", "")
	t.Setenv("PATH", t.TempDir())
	if p := browsertest.Path(); p != "" {
		t.Fatalf("Path with nothing installed: got %q, want \"\"", p)
	}
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		browsertest.NewBrowser(rec)
	}()
	<-done
	if !strings.Contains(rec.msg, "deploy/local/deps.sh") {
		t.Errorf("failure message: got %q, want it to point at deploy/local/deps.sh", rec.msg)
	}
}
