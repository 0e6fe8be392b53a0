package loadtest

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestReadResponse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, answer string
		status       int
		wantErr      bool
		rest         string // what must be left unread: the next answer on the connection
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello" + "NEXT", 200, false, "NEXT"},
		{"empty body", "HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\nNEXT", 204, false, "NEXT"},
		{"chunked with extension and trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT", 200, false, "NEXT"},
		{"status other than 200 is read to its end", "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 2\r\n\r\n{}NEXT", 429, false, "NEXT"},
		{"server closes", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 200, true, ""},
		{"no framing", "HTTP/1.1 200 OK\r\n\r\nok", 0, true, ""},
		{"bad status line", "HTTP/2 200\r\n\r\n", 0, true, ""},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, true, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, true, ""},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 0, true, ""},
		{"header without colon", "HTTP/1.1 200 OK\r\nbogus\r\n\r\n", 0, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(c.answer))
			status, err := readResponse(r)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			rest, _ := r.ReadString(0)
			if status != c.status || rest != c.rest {
				t.Fatalf("status %d, left %q; want %d, %q", status, rest, c.status, c.rest)
			}
		})
	}
}

// A connection sends what net/http's server reads as the request it was given, and keeps working
// across requests.
func TestRawConnSendsTheRequest(t *testing.T) {
	t.Parallel()
	type seen struct{ method, uri, contentType, auth, body string }
	got := make(chan seen, 2)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		got <- seen{r.Method, r.RequestURI, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), string(b[:n])}
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, "no", http.StatusTeapot)
			return
		}
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL + "/v1/score?x=1")
	rc := &rawConn{host: u.Host, timeout: 5 * time.Second}
	defer rc.close()
	header := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}}
	if err := rc.do(context.Background(), http.MethodPost, u, []byte(`{"a":1}`), header); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != (seen{"POST", "/v1/score?x=1", "application/json", "Bearer k", `{"a":1}`}) {
		t.Fatalf("server saw %+v", s)
	}
	fail, _ := url.Parse(ts.URL + "/?fail=1")
	if err := rc.do(context.Background(), http.MethodGet, fail, nil, nil); err == nil || !strings.Contains(err.Error(), "status 418") {
		t.Fatalf("err = %v, want status 418", err)
	}
	if s := <-got; s.method != "GET" || s.body != "" {
		t.Fatalf("server saw %+v", s)
	}
	other, _ := url.Parse("http://127.0.0.1:1/")
	if err := rc.do(context.Background(), http.MethodGet, other, nil, nil); err == nil {
		t.Fatal("a request to another host went through")
	}
}
