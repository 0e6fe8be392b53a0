package safehttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

var (
	pdfBytes  = []byte("%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + strings.Repeat("x", 600))
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	zipBytes  = []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00")
	htmlBytes = []byte("<!DOCTYPE html><html><body>policy</body></html>")
	binBytes  = []byte("\x00\x01\x02\x03\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")
)

func TestCompatible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		declared, sniffed string
		want              bool
	}{
		{"application/pdf", "application/pdf", true},
		{"application/pdf", "", true},
		{"text/plain", "text/plain", true},
		{"text/markdown", "text/html", true},
		{"text/html", "text/plain", true},
		{"application/json", "text/plain", true},
		{"application/ld+json", "text/plain", true},
		{"image/svg+xml", "text/xml", true},
		{"application/xml", "text/xml", true},
		{"application/octet-stream", "application/pdf", true},
		{"application/gzip", "application/x-gzip", true},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip", true},
		{"application/epub+zip", "application/zip", true},
		{"application/msword", "application/octet-stream", true},

		{"text/html", "application/pdf", false},
		{"text/plain", "image/png", false},
		{"text/plain", "application/octet-stream", false},
		{"application/json", "application/zip", false},
		{"application/pdf", "text/plain", false},
		{"application/pdf", "text/html", false},
		{"application/pdf", "application/octet-stream", false},
		{"image/png", "image/jpeg", false},
		{"application/msword", "text/plain", false},
		{"application/pdf", "application/zip", false},
	}
	for _, tt := range tests {
		if got := compatible(tt.declared, tt.sniffed); got != tt.want {
			t.Errorf("compatible(%q, %q): got %v, want %v", tt.declared, tt.sniffed, got, tt.want)
		}
	}
}

func TestDoMIME(t *testing.T) {
	t.Parallel()
	docs := []string{"application/pdf", "text/*", "application/json",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
	tests := []struct {
		name        string
		allowed     []string
		contentType string // "-" sends no Content-Type at all
		body        []byte
		want        Kind // KindUnknown: accepted
		mediaType   string
		sniffed     string
	}{
		{"pdf", docs, "application/pdf", pdfBytes, KindUnknown, "application/pdf", "application/pdf"},
		{"html with charset", docs, "text/html; charset=UTF-8", htmlBytes, KindUnknown, "text/html", "text/html"},
		{"json sniffs as text", docs, "application/json", []byte(`{"a":1}`), KindUnknown, "application/json", "text/plain"},
		{"docx is a zip", docs, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", zipBytes, KindUnknown,
			"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"},
		{"no header, sniffed pdf", docs, "-", pdfBytes, KindUnknown, "", "application/pdf"},
		{"empty body", docs, "application/pdf", nil, KindUnknown, "application/pdf", ""},
		{"any type without a list", nil, "image/png", pngBytes, KindUnknown, "image/png", "image/png"},
		{"mismatch ignored without a list", nil, "text/html", pdfBytes, KindUnknown, "text/html", "application/pdf"},

		{"declared type not allowed", docs, "image/png", pngBytes, KindMIME, "", ""},
		{"html that is a pdf", docs, "text/html", pdfBytes, KindMIME, "", ""},
		{"pdf that is html", docs, "application/pdf", htmlBytes, KindMIME, "", ""},
		{"pdf that is unknown binary", docs, "application/pdf", binBytes, KindMIME, "", ""},
		{"text that is binary", docs, "text/plain", binBytes, KindMIME, "", ""},
		{"no header, sniffed png", docs, "-", pngBytes, KindMIME, "", ""},
		{"malformed header", docs, "text/", []byte("hi"), KindMIME, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, hits := countingServer(t, func(w http.ResponseWriter, _ *http.Request) {
				if tt.contentType == "-" {
					w.Header()["Content-Type"] = nil // stops net/http from sniffing one itself
				} else {
					w.Header().Set("Content-Type", tt.contentType)
				}
				_, _ = w.Write(tt.body)
			})
			c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, AllowedMIME: tt.allowed})

			resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
			if tt.want != KindUnknown {
				e := wantKind(t, err, tt.want)
				if e.Attempts != 1 || hits.Load() != 1 || !Permanent(err) {
					t.Errorf("got attempts %d, requests %d, permanent %v; want 1, 1, true", e.Attempts, hits.Load(), Permanent(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			defer resp.Body.Close()
			if resp.MediaType != tt.mediaType || resp.SniffedType != tt.sniffed {
				t.Errorf("got media type %q, sniffed %q; want %q, %q", resp.MediaType, resp.SniffedType, tt.mediaType, tt.sniffed)
			}
			// The sniffed bytes are handed back: the body arrives whole.
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, tt.body) {
				t.Errorf("body: got %d bytes (%v), want the %d bytes sent", len(got), err, len(tt.body))
			}
		})
	}
}
