package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// rawConn is one keep-alive HTTP/1.1 connection that sends a request and reads its answer with
// nothing in between: no transport goroutines, no per-request header maps. The open loop uses it
// instead of net/http's client because the client's own cost is what a load generator on one core
// adds to the tail it measures: against nginx answering a static body at 5,500 requests/s on the
// other core, p99 was 2.2 ms with these connections, 2.9-8.7 ms with net/http's client and 4.5-6 ms
// with vegeta's attacker (2026-11, this repository's 2-core machine). It speaks only what the
// services answer: a status line, headers, and a body framed by Content-Length or chunks.
type rawConn struct {
	host    string // host:port it dials
	timeout time.Duration
	c       net.Conn
	r       *bufio.Reader
	out     bytes.Buffer
}

func (rc *rawConn) close() {
	if rc.c != nil {
		_ = rc.c.Close()
		rc.c = nil
	}
}

// do sends one request and reads the whole answer; a status other than 200 is an error. A failed
// exchange closes the connection, and the next request dials again.
func (rc *rawConn) do(ctx context.Context, method string, u *url.URL, body []byte, header http.Header) error {
	if u.Host != rc.host {
		return fmt.Errorf("loadtest: request to %s on a connection to %s", u.Host, rc.host)
	}
	if rc.c == nil {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", rc.host)
		if err != nil {
			return err
		}
		rc.c, rc.r = c, bufio.NewReaderSize(c, 16<<10)
	}
	// The run's end cuts an exchange short: closing the connection unblocks its read.
	c := rc.c
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	status, err := rc.exchange(method, u, body, header)
	if err != nil {
		rc.close()
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s %s: status %d", method, u, status)
	}
	return nil
}

func (rc *rawConn) exchange(method string, u *url.URL, body []byte, header http.Header) (int, error) {
	if err := rc.c.SetDeadline(time.Now().Add(rc.timeout)); err != nil {
		return 0, err
	}
	rc.out.Reset()
	fmt.Fprintf(&rc.out, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&rc.out, "%s: %s\r\n", k, v)
		}
	}
	if body != nil {
		fmt.Fprintf(&rc.out, "Content-Length: %d\r\n", len(body))
	}
	rc.out.WriteString("\r\n")
	rc.out.Write(body)
	if _, err := rc.c.Write(rc.out.Bytes()); err != nil {
		return 0, err
	}
	return readResponse(rc.r)
}

// readResponse reads an HTTP/1.1 answer to its end and returns its status. It keeps nothing of the
// body; an answer that closes the connection is an error, so that the caller dials again.
func readResponse(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, fmt.Errorf("loadtest: bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("loadtest: bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("loadtest: bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, fmt.Errorf("loadtest: bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		err = discardChunks(r)
	case length >= 0:
		_, err = r.Discard(length)
	default:
		return 0, errors.New("loadtest: an answer without Content-Length or chunks")
	}
	if err == nil && closing {
		err = errors.New("loadtest: the server closed the connection")
	}
	return status, err
}

func discardChunks(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		size, err := strconv.ParseUint(string(bytes.TrimSpace(sizeText)), 16, 32)
		if err != nil {
			return fmt.Errorf("loadtest: bad chunk size %q", line)
		}
		if size == 0 {
			// Trailers, then the empty line.
			for {
				line, err = r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if _, err := io.CopyN(io.Discard, r, int64(size)+2); err != nil { // the chunk and its CRLF
			return err
		}
	}
}
