// Package browsertest drives a headless Chromium from tests through the DevTools protocol
// (chromedp): open a page, take a screenshot, evaluate JavaScript, read text. Each Browser is a
// fresh Chromium process with a profile of its own (a temporary --user-data-dir), started with
// --headless --no-sandbox --disable-gpu --disable-background-networking, so that tests neither share
// state nor reach the network on their own.
//
// Chromium comes from Debian's chromium package (deploy/local/deps.sh installs it); CHROMIUM_PATH
// names another binary. A test that needs a browser fails, never skips, when none is found.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Default viewport of a Browser: what Screenshot's PNG measures.
const (
	DefaultWidth  = 1280
	DefaultHeight = 800
)

// Timeout bounds each call (navigation, evaluation, screenshot).
const Timeout = 30 * time.Second

// Browser is one headless Chromium; its tabs live until the test ends.
type Browser struct {
	Width, Height int

	ctx context.Context
	mu  sync.Mutex
	// dialogs lists the messages of every JavaScript dialog (alert, confirm, prompt) a page opened;
	// each was dismissed.
	dialogs []string
}

// Path returns the Chromium binary the package would start: $CHROMIUM_PATH, else chromium,
// chromium-browser, google-chrome or google-chrome-stable on PATH; "" when there is none.
func Path() string {
	if p := os.Getenv("CHROMIUM_PATH"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// NewBrowser starts a Chromium for t and stops it when t ends. It fails t, with how to install one,
// when no Chromium is found.
func NewBrowser(t testing.TB) *Browser {
	t.Helper()
	bin := Path()
	if bin == "" {
		t.Fatal("browsertest: no Chromium found (looked for $CHROMIUM_PATH, chromium, chromium-browser, google-chrome): " +
			"run deploy/local/deps.sh ensure (or deploy/local/deps.sh chromium), which installs Debian's chromium package")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(DefaultWidth, DefaultHeight),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &Browser{Width: DefaultWidth, Height: DefaultHeight, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser and its tab now (without a timeout: the first Run's context would stop the
	// whole browser when it ends), so that a broken installation fails here with its own message.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: starting %s: %v (deploy/local/deps.sh installs a working chromium)", bin, err)
	}
	// A dialog blocks the page until it is handled: record it, and dismiss it from another goroutine
	// (a listener may not run commands itself).
	err := chromedp.Listen(ctx, func(ev any) {
		d, ok := ev.(*page.EventJavascriptDialogOpening)
		if !ok {
			return
		}
		b.mu.Lock()
		b.dialogs = append(b.dialogs, d.Message)
		b.mu.Unlock()
		go func() {
			_, _ = chromedp.Run(ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
				_, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
				return chromedp.Void{}, err
			})
		}()
	})
	if err != nil {
		t.Fatalf("browsertest: listening to the tab: %v", err)
	}
	return b
}

// Dialogs returns the messages of the JavaScript dialogs pages opened so far: a page that escapes
// what it shows opens none when a test injects alert(...).
func (b *Browser) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// Do runs actions in the browser's tab, in order, within Timeout, failing t on an error.
func (b *Browser) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browsertest: %v", err)
	}
}

// Run runs one action that returns a value within Timeout, failing t on an error.
func Run[T any](t testing.TB, b *Browser, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("browsertest: %v", err)
	}
	return v
}

// Open navigates to url at the browser's viewport and waits for the body to be ready.
func (b *Browser) Open(t testing.TB, url string) {
	t.Helper()
	b.Do(t, chromedp.EmulateViewport(int64(b.Width), int64(b.Height)), chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
}

// Screenshot opens url and returns a PNG of the viewport (Width x Height pixels).
func (b *Browser) Screenshot(t testing.TB, url string) []byte {
	t.Helper()
	b.Open(t, url)
	return Run(t, b, chromedp.CaptureScreenshot())
}

// Eval evaluates the JavaScript expression in the open page and returns its value, decoded from
// JSON as T.
func Eval[T any](t testing.TB, b *Browser, expression string) T {
	t.Helper()
	return Run(t, b, chromedp.Evaluate[T](expression))
}

// Text returns the text content of the first element that the CSS selector matches in the open
// page, waiting for it to exist.
func (b *Browser) Text(t testing.TB, selector string) string {
	t.Helper()
	return Run(t, b, chromedp.TextContent(chromedp.CSS(selector)))
}

// PNGSize decodes a PNG's dimensions, failing t when it is no PNG.
func PNGSize(t testing.TB, b []byte) (width, height int) {
	t.Helper()
	if len(b) == 0 {
		t.Fatal("browsertest: empty screenshot")
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil || format != "png" {
		t.Fatalf("browsertest: not a PNG (%s): %v", format, err)
	}
	return cfg.Width, cfg.Height
}

// CheckScreenshot fails t unless shot is a non-empty PNG of the browser's viewport size whose pixels
// are not all one colour (a blank page).
func (b *Browser) CheckScreenshot(t testing.TB, shot []byte) {
	t.Helper()
	w, h := PNGSize(t, shot)
	if w != b.Width || h != b.Height {
		t.Fatalf("browsertest: screenshot is %dx%d, want %dx%d", w, h, b.Width, b.Height)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("browsertest: decoding the screenshot: %v", err)
	}
	first := fmt.Sprint(img.At(0, 0))
	for y := 0; y < h; y += 7 {
		for x := 0; x < w; x += 7 {
			if fmt.Sprint(img.At(x, y)) != first {
				return
			}
		}
	}
	t.Fatal("browsertest: the screenshot is a single colour (a blank page)")
}
