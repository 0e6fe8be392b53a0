package safehttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// sniffLen is how many bytes net/http.DetectContentType considers (WHATWG MIME Sniffing §7).
const sniffLen = 512

// capReader passes at most max bytes of r and then fails with KindTooLarge if r has more. It decides
// on bytes actually read, so a missing or lying Content-Length (or a gzip body that inflates) changes
// nothing.
type capReader struct {
	r         io.Reader
	remaining int64
	max       int64
	host      string
	err       error
}

func (l *capReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	// Ask for one byte past the cap, so that a body of exactly max bytes ends cleanly and a longer one
	// is caught without reading further.
	if int64(len(p)) > l.remaining+1 {
		p = p[:l.remaining+1]
	}
	n, err := l.r.Read(p)
	if int64(n) > l.remaining {
		n = int(l.remaining)
		l.remaining = 0
		l.err = tooLarge(l.host, l.max)
		return n, l.err
	}
	l.remaining -= int64(n)
	return n, err
}

func tooLarge(host string, max int64) *Error {
	return &Error{Kind: KindTooLarge, Host: host, Reason: fmt.Sprintf("body exceeds %d bytes", max)}
}

// body is Response.Body: the peeked bytes, then the rest of the capped stream. Closing it closes the
// connection's body and ends the attempt's context, whose deadline also bounds the reading.
type body struct {
	r      io.Reader
	closer io.Closer
	cancel context.CancelFunc
	parent context.Context
	ctx    context.Context
	host   string
}

// Read returns the body's bytes; failures are *Error values (KindTooLarge, KindTimeout, KindNetwork,
// KindCanceled).
func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = classify(err, b.parent, b.ctx, b.host)
	}
	return n, err
}

// Close releases the connection and the attempt's context.
func (b *body) Close() error {
	err := b.closer.Close()
	b.cancel()
	return err
}

// peek reads up to sniffLen bytes of r for sniffing; a shorter body is not an error.
func peek(r io.Reader) ([]byte, error) {
	buf := make([]byte, sniffLen)
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = nil
	}
	return buf[:n], err
}

// newBody rebuilds the stream so that the caller reads the peeked bytes again, then the rest.
func newBody(peeked []byte, rest io.Reader, closer io.Closer, parent, ctx context.Context, cancel context.CancelFunc, host string) *body {
	return &body{
		r:      io.MultiReader(bytes.NewReader(peeked), rest),
		closer: closer,
		cancel: cancel,
		parent: parent,
		ctx:    ctx,
		host:   host,
	}
}
