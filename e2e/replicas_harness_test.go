package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
)

// The replica tests run each service as three operating-system processes built from its cmd, on one
// database per service and one NATS namespace: what a deployment with three replicas is, minus the
// load balancer, which the tests play by sending requests round-robin.

const replicaAdminToken = "e2e-replicas-admin-token-0123456789"

var replicaServices = []string{"verification", "scoring", "ingestion"}

// buildBinaries returns the directory of the three service binaries: ./bin when `make build` left
// them there newer than every source file they are built from, else a temporary directory they are
// built into once (`go build` of each cmd).
func buildBinaries(t *testing.T) string {
	t.Helper()
	if dir, ok := freshBinaries(); ok {
		t.Logf("using the service binaries of %s (newer than their sources)", dir)
		return dir
	}
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, s := range replicaServices {
		args = append(args, "./services/"+s+"/cmd/"+s)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = ".." // the repository root, where go.work joins the modules
	began := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the services: %v\n%s", err, out)
	}
	t.Logf("built the three services in %s", time.Since(began).Round(time.Millisecond))
	return dir
}

// freshBinaries reports whether ../bin holds the three binaries, each newer than every file they are
// built from: the services' and the shared modules' files other than tests and documentation, and
// the workspace files.
func freshBinaries() (string, bool) {
	dir, err := filepath.Abs(filepath.Join("..", "bin"))
	if err != nil {
		return "", false
	}
	var built time.Time
	for _, s := range replicaServices {
		fi, err := os.Stat(filepath.Join(dir, s))
		if err != nil {
			return "", false
		}
		if built.IsZero() || fi.ModTime().Before(built) {
			built = fi.ModTime()
		}
	}
	stale := errors.New("stale")
	for _, root := range []string{"../services", "../pkg", "../proto", "../go.work", "../go.work.sum"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".md") {
				return nil
			}
			if fi, err := d.Info(); err != nil || fi.ModTime().After(built) {
				return stale
			}
			return nil
		})
		if err != nil {
			return "", false
		}
	}
	return dir, true
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// logBuffer keeps a process's output for the test log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is one replica: a service binary running in its own process group.
type proc struct {
	name   string // "scoring-2"
	url    string // http://127.0.0.1:port
	cmd    *exec.Cmd
	logs   *logBuffer
	done   chan struct{}
	err    error // what Wait returned, once done is closed
	exited atomic.Bool
}

// replicaSet is the replicas of one service, with what they share.
type replicaSet struct {
	t       *testing.T
	service string
	prefix  string
	bin     string
	env     map[string]string // shared by every replica
	dbURL   string
	procs   []*proc
	next    atomic.Uint32
}

// newReplicaSet prepares a service's replicas: a fresh database and env, shared by every replica.
func newReplicaSet(t *testing.T, binDir, service, dbURL string, env map[string]string) *replicaSet {
	t.Helper()
	prefix := strings.ToUpper(service) + "_"
	shared := map[string]string{
		prefix + "DATABASE_URL":     dbURL,
		prefix + "ADMIN_TOKEN":      replicaAdminToken,
		prefix + "BLOB_URL":         "file://" + t.TempDir() + "?create_dir=1",
		prefix + "SHUTDOWN_TIMEOUT": "10s",
		"NATS_URL":                  natstest.URL(),
	}
	for k, v := range env {
		shared[k] = v
	}
	return &replicaSet{t: t, service: service, prefix: prefix, bin: filepath.Join(binDir, service), env: shared, dbURL: dbURL}
}

// start starts one more replica on ports of its own and returns at once; wait for it with ready.
func (r *replicaSet) start() *proc {
	p := &proc{name: fmt.Sprintf("%s-%d", r.service, len(r.procs)+1)}
	r.launch(p)
	r.procs = append(r.procs, p)
	return p
}

// launch starts p's process on two free ports. A port found free may be taken by another test's
// listener before the process binds it; ready then launches the replica again on other ports.
func (r *replicaSet) launch(p *proc) {
	t := r.t
	t.Helper()
	httpAddr, grpcAddr := freePort(t), freePort(t)
	p.url, p.logs, p.done, p.err = "http://"+httpAddr, &logBuffer{}, make(chan struct{}), nil
	p.exited.Store(false)
	cmd := exec.Command(r.bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, r.prefix+"HTTP_ADDR="+httpAddr, r.prefix+"GRPC_ADDR="+grpcAddr)
	logs, done := p.logs, p.done
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = replicaProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	p.cmd = cmd
	var exited atomic.Bool
	go func() {
		err := cmd.Wait()
		p.err = err
		exited.Store(true)
		p.exited.Store(true)
		close(done)
	}()
	// Registered after the test's own cleanups, so it runs before them (LIFO): no process outlives the
	// test, its databases or its fixture servers.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- log of %s ----\n%s", p.name, tail(logs.String(), 64<<10))
		}
		if !exited.Load() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
}

// tail is the last n bytes of s, cut at a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "...\n" + s
}

// ready waits until the replica answers /readyz with 200, failing the test when it exits first.
func (r *replicaSet) ready(p *proc) {
	t := r.t
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	relaunches := 0
	for {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			if strings.Contains(p.logs.String(), "address already in use") && relaunches < 3 {
				relaunches++
				t.Logf("%s: a port was taken before it bound it; starting it again on other ports", p.name)
				r.launch(p)
				continue
			}
			t.Fatalf("%s exited before it was ready: %v", p.name, p.err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90 s", p.name)
		}
	}
}

// stopAll sends SIGTERM to every replica at once and checks that each exits 0 within its drain time.
func (r *replicaSet) stopAll(t *testing.T) {
	t.Helper()
	for _, p := range r.procs {
		if !p.exited.Load() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range r.procs {
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("%s after SIGTERM: %v, want exit status 0", p.name, p.err)
			}
		case <-time.After(40 * time.Second):
			t.Errorf("%s still running 40 s after SIGTERM", p.name)
		}
	}
}

// url returns the replicas' URLs in turn: the round-robin of a load balancer.
func (r *replicaSet) url() string {
	n := r.next.Add(1) - 1
	return r.procs[int(n)%len(r.procs)].url
}

// reply is one HTTP answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s is not a JSON object", r.body)
	}
	return m
}

// call sends a JSON request to url with the headers (pairs of name and value) and fails the test when
// no answer came back.
func call(t *testing.T, method, url string, body any, header ...string) reply {
	t.Helper()
	r, err := send(method, url, body, header...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// try is call for a goroutine of its own, where the test cannot be stopped: a request that got no
// answer is an error, and its reply has status 0.
func try(t *testing.T, method, url string, body any, header ...string) reply {
	t.Helper()
	r, err := send(method, url, body, header...)
	if err != nil {
		t.Error(err)
	}
	return r
}

func send(method, url string, body any, header ...string) (reply, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: reading the body: %w", method, url, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// must is call that fails the test unless the status is want; it returns the body as an object.
func must(t *testing.T, want int, method, url string, body any, header ...string) map[string]any {
	t.Helper()
	r := call(t, method, url, body, header...)
	if r.status != want {
		t.Fatalf("%s %s: got %d %s, want %d", method, url, r.status, r.body, want)
	}
	if len(r.body) == 0 {
		return nil
	}
	return r.object(t)
}

// admin is the admin-token header pair.
func admin() []string { return []string{"X-Admin-Token", replicaAdminToken} }

// bearerHeader is the bearer header pair of key.
func bearerHeader(key string) []string { return []string{"Authorization", "Bearer " + key} }

// waitFor polls cond every 50 ms until it holds, for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}

// quiet waits until count has not changed for the period (a few scheduler ticks of every replica), for
// at most d: the way to see that nothing more happens without asserting on timings.
func quiet(t *testing.T, period, d time.Duration, what string, count func() int) {
	t.Helper()
	last, since := count(), time.Now()
	for deadline := time.Now().Add(d); time.Since(since) < period; time.Sleep(100 * time.Millisecond) {
		if n := count(); n != last {
			last, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still changing after %s", what, d)
		}
	}
}

// queryInt runs a query returning one integer on the database at url.
func queryInt(t *testing.T, url, sql string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// execSQL runs a statement on the database at url.
func execSQL(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// connectBus connects to the test NATS in namespace and deletes the namespace's streams when the test
// ends, since they would otherwise stay on the shared server.
func connectBus(t *testing.T, namespace string) *bus.Bus {
	t.Helper()
	b, err := bus.Connect(natstest.URL(), namespace, "e2e-replicas", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		prefix := b.StreamName("")
		names := b.JS.StreamNames(ctx)
		for name := range names.Name() {
			if strings.HasPrefix(name, prefix) {
				if err := b.JS.DeleteStream(ctx, name); err != nil && !errors.Is(err, context.Canceled) {
					t.Logf("delete stream %s: %v", name, err)
				}
			}
		}
		b.Close()
	})
	return b
}
