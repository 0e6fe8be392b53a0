package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	platformtestv1 "github.com/trustlayer/trustlayer/proto/platformtest/v1"
)

// limited starts a server with small limits, the echo service on the gateway and a plain POST /count
// handler that reports how many body bytes it could read, and GET /slow that answers after wait.
func limited(t *testing.T, cfg serve.Config, wait time.Duration) (base string, seen *atomic.Int64) {
	t.Helper()
	cfg.Name, cfg.HTTPAddr, cfg.GRPCAddr, cfg.ShutdownTimeout = "echo", "127.0.0.1:0", "127.0.0.1:0", 2*time.Second
	cfg.Logger = slog.New(slog.NewJSONHandler(&servicetest.Logs{}, nil))
	srv, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(&platformtestv1.EchoService_ServiceDesc, &echoServer{started: make(chan struct{})},
		serve.Gateway(platformtestv1.RegisterEchoServiceHandlerClient, platformtestv1.NewEchoServiceClient)); err != nil {
		t.Fatal(err)
	}
	seen = &atomic.Int64{}
	srv.Handle("POST /count", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		seen.Store(n)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = fmt.Fprint(w, n)
	}))
	srv.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(wait):
			_, _ = fmt.Fprint(w, "done")
		case <-r.Context().Done():
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + srv.HTTPAddr(), seen
}

// chunked is a body of unknown length, so that only reading it can find it too large.
type chunked struct{ left int }

func (c *chunked) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.left)
	for i := range n {
		p[i] = ' '
	}
	c.left -= n
	return n, nil
}

func post(t *testing.T, url string, body io.Reader, size int64) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func TestBodyCap(t *testing.T) {
	t.Parallel()
	base, seen := limited(t, serve.Config{MaxBodyBytes: 1000, Routes: []serve.RouteLimits{{Path: "/big/", MaxBodyBytes: 5000}}}, 0)
	const tooLarge = `{"detail":"Request body too large"}`

	// Declared too large: refused before any handler runs.
	if code, body := post(t, base+"/count", strings.NewReader(strings.Repeat(" ", 2000)), 2000); code != 413 || body != tooLarge {
		t.Fatalf("declared over-cap body: %d %s", code, body)
	}
	if seen.Load() != 0 {
		t.Fatalf("the handler read %d bytes of a refused body", seen.Load())
	}
	// Chunked: the handler's read fails at the cap.
	if code, _ := post(t, base+"/count", &chunked{left: 1 << 20}, -1); code != 413 {
		t.Fatalf("chunked over-cap body to a plain handler: %d", code)
	}
	if n := seen.Load(); n > 1000 {
		t.Fatalf("the handler read %d bytes, over the cap of 1000", n)
	}
	// The gateway answers a chunked over-cap body with the same 413.
	if code, body := post(t, base+"/v1/echoes", &chunked{left: 1 << 20}, -1); code != 413 || body != tooLarge {
		t.Fatalf("chunked over-cap body to the gateway: %d %s", code, body)
	}
	if code, body := post(t, base+"/v1/echoes", strings.NewReader(`{"text":"`+strings.Repeat("a", 2000)+`"}`), -1); code != 413 || body != tooLarge {
		t.Fatalf("over-cap body to the gateway: %d %s", code, body)
	}
	// Under the cap, and a route with a larger one.
	if code, body := post(t, base+"/count", strings.NewReader(strings.Repeat(" ", 1000)), 1000); code != 200 || body != "1000" {
		t.Fatalf("body at the cap: %d %s", code, body)
	}
	if code, body := post(t, base+"/v1/echoes", strings.NewReader(`{"text":"hi"}`), -1); code != 201 {
		t.Fatalf("small body to the gateway: %d %s", code, body)
	}
	if code, _ := post(t, base+"/big/x", strings.NewReader(strings.Repeat(" ", 4000)), 4000); code != 404 {
		t.Fatalf("body under a route's larger cap: %d, want the mux's 404", code)
	}
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	base, _ := limited(t, serve.Config{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond}, 0)
	addr := strings.TrimPrefix(base, "http://")

	t.Run("headers", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		go func() {
			for _, line := range []string{"POST /count HTTP/1.1\r\n", "Host: x\r\n", "X-A: 1\r\n", "X-B: 1\r\n", "X-C: 1\r\n", "X-D: 1\r\n", "X-E: 1\r\n"} {
				if _, err := conn.Write([]byte(line)); err != nil {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		if !closedWithin(conn, 3*time.Second) {
			t.Fatal("a client sending its headers slowly kept the connection")
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("cut off after %v", d)
		}
	})
	t.Run("body", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		go func() {
			for range 100 {
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		if !closedWithin(conn, 5*time.Second) {
			t.Fatal("a client sending its body one byte at a time kept the connection")
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("cut off after %v", d)
		}
	})
}

func TestReadTimeoutSparesLongHandlers(t *testing.T) {
	t.Parallel()
	base, _ := limited(t, serve.Config{ReadTimeout: 200 * time.Millisecond, WriteTimeout: 5 * time.Second}, time.Second)
	resp, err := http.Get(base + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "done" {
		t.Fatalf("a handler running past the read timeout: %d %s", resp.StatusCode, b)
	}
}

func TestConnectionBound(t *testing.T) {
	t.Parallel()
	base, _ := limited(t, serve.Config{MaxConnections: 2}, 0)
	addr := strings.TrimPrefix(base, "http://")
	get := func(conn net.Conn, wait time.Duration) error {
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	var conns []net.Conn
	for range 3 {
		conn, err := net.Dial("tcp", addr) // the third waits in the backlog
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	for _, conn := range conns[:2] {
		if err := get(conn, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := get(conns[2], 500*time.Millisecond); err == nil {
		t.Fatal("a third connection was served while two were open, over MaxConnections 2")
	}
	_ = conns[0].Close()
	// The request written above is read once the server accepts the connection.
	_ = conns[2].SetReadDeadline(time.Now().Add(2 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conns[2]), nil)
	if err != nil {
		t.Fatalf("the third connection was not served once a slot freed: %v", err)
	}
	_ = resp.Body.Close()
}
