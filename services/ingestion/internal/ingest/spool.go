package ingest

import (
	"bytes"
	"io"
	"os"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// spoolMemory is how much of a document is kept in memory before it spills to a temporary file: most
// policy pages are far smaller, and a file per fetch costs more than the fetch itself on loopback (the
// unchanged-document benchmark spent a sixth of its CPU creating temporary files). Larger documents, up
// to the fetch cap, go to disk, so that one is never held in memory while it is also archived.
const spoolMemory = 1 << 20

// spool holds a fetched document for the two passes the pipeline makes over it (archive, normalise).
type spool struct {
	buf  bytes.Buffer
	file *os.File
}

func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && s.buf.Len()+len(p) <= spoolMemory {
		return s.buf.Write(p)
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "ingest-*")
		if err != nil {
			return 0, err
		}
		s.file = f
		if _, err := s.buf.WriteTo(f); err != nil {
			return 0, err
		}
		s.buf = bytes.Buffer{} // its memory is not needed again
	}
	return s.file.Write(p)
}

// Reader returns the whole document from its first byte; each call starts again.
func (s *spool) Reader() (io.Reader, error) {
	if s.file == nil {
		return bytes.NewReader(s.buf.Bytes()), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return s.file, nil
}

// normalizeOptions lets the normaliser read a spilled document from its file (pdftotext then needs
// no in-memory copy of it).
func (s *spool) normalizeOptions() []normalize.Option {
	if s.file == nil {
		return nil
	}
	return []normalize.Option{normalize.WithSourceFile(s.file.Name())}
}

// Close removes the temporary file, if there is one.
func (s *spool) Close() error {
	if s.file == nil {
		return nil
	}
	_ = s.file.Close()
	return os.Remove(s.file.Name())
}
