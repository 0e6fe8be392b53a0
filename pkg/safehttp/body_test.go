package safehttp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestSizeCap(t *testing.T) {
	t.Parallel()
	const limit = 4096
	big := strings.Repeat("a", 3*limit)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(strings.Repeat("a", 1<<20)))
	_ = zw.Close()

	tests := []struct {
		name      string
		max       int64
		handler   http.HandlerFunc
		doErr     bool // the cap trips in Do (declared length, or within the sniffed bytes)
		readErr   bool // the cap trips while reading
		wantBytes int
	}{
		{
			name: "declared length over the cap",
			max:  limit,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				_, _ = io.WriteString(w, big)
			},
			doErr: true,
		},
		{
			name: "no length, streamed past the cap",
			max:  limit,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				for range 3 {
					_, _ = io.WriteString(w, big[:limit])
					w.(http.Flusher).Flush() // forces chunked encoding: no Content-Length
				}
			},
			readErr:   true,
			wantBytes: limit,
		},
		{
			name: "small declared length, gzip inflating past the cap",
			max:  limit,
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Encoding", "gzip")
				w.Header().Set("Content-Length", strconv.Itoa(gz.Len()))
				_, _ = w.Write(gz.Bytes())
			},
			readErr:   true,
			wantBytes: limit,
		},
		{
			name:      "exactly the cap",
			max:       limit,
			handler:   text(big[:limit]),
			wantBytes: limit,
		},
		{
			name:    "cap inside the sniffed bytes",
			max:     100,
			handler: text(big[:1000]),
			doErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := countingServer(t, tt.handler)
			c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, MaxBytes: tt.max})

			resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
			if tt.doErr {
				e := wantKind(t, err, KindTooLarge)
				if !Permanent(err) || e.Attempts != 1 || hits.Load() != 1 {
					t.Errorf("got permanent %v, attempts %d, requests %d; want true, 1, 1", Permanent(err), e.Attempts, hits.Load())
				}
				return
			}
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if tt.readErr {
				wantKind(t, err, KindTooLarge)
			} else if err != nil {
				t.Fatalf("read: %v", err)
			}
			if len(got) != tt.wantBytes {
				t.Errorf("read %d bytes, want %d", len(got), tt.wantBytes)
			}
		})
	}
}

func TestCapReaderKeepsFailing(t *testing.T) {
	t.Parallel()
	r := &capReader{r: strings.NewReader("0123456789"), remaining: 4, max: 4}
	got, err := io.ReadAll(r)
	if string(got) != "0123" || KindOf(err) != KindTooLarge {
		t.Fatalf("got %q, %v; want \"0123\" and KindTooLarge", got, err)
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || KindOf(err) != KindTooLarge {
		t.Errorf("read after failure: got %d, %v; want 0, KindTooLarge", n, err)
	}
}
