package serve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/serve"
)

// requireToken refuses calls without an authorization of "Bearer good", and counts the calls whose
// handler it let run.
func requireToken(handled *atomic.Int64) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer good" {
			return nil, status.Error(codes.Unauthenticated, "Missing bearer token")
		}
		resp, err := handler(ctx, req)
		if req != nil {
			handled.Add(1)
		}
		return resp, err
	}
}

func TestLargeBodiesAreAuthenticatedBeforeTheyAreRead(t *testing.T) {
	t.Parallel()
	var handled atomic.Int64
	base, _ := limited(t, serve.Config{MaxBodyBytes: 1 << 20, Unary: []grpc.UnaryServerInterceptor{requireToken(&handled)}}, 0)
	echo := func(body string) *strings.Reader { return strings.NewReader(`{"text":"` + body + `"}`) }
	large := strings.Repeat("a", serve.AuthFirstAbove+1)

	// A body of unknown length over the cap: read first, it would be a 413; authenticated first, the
	// caller's 401 comes before a byte of it is read.
	if code, body := post(t, base+"/v1/echoes", &chunked{left: 4 << 20}, -1); code != 401 {
		t.Fatalf("anonymous chunked body over the cap: got %d %s, want 401 (authenticated before reading)", code, body)
	}
	// A declared large body: 401, and the same body as the call's own refusal.
	declared := echo(large)
	code, refused := post(t, base+"/v1/echoes", declared, declared.Size())
	_, small := post(t, base+"/v1/echoes", echo("hi"), -1)
	if code != 401 || refused != small {
		t.Fatalf("anonymous large body: got %d %s, want 401 with the body of a small call's refusal %s", code, refused, small)
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("%d refused calls reached their handler", n)
	}

	// With the token, large and small bodies pass, each handled once.
	for _, text := range []string{"hi", large} {
		req := postWith(t, base+"/v1/echoes", echo(text), map[string]string{"Authorization": "Bearer good"})
		if req != 201 {
			t.Fatalf("authenticated body of %d bytes: got %d, want 201", len(text), req)
		}
	}
	if n := handled.Load(); n != 2 {
		t.Fatalf("handled %d calls, want 2 (the early check never runs a handler)", n)
	}
}

// postWith posts body (of unknown length) with headers and returns the status.
func postWith(t *testing.T, url string, body *strings.Reader, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
