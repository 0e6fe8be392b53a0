package ingest

import (
	"bytes"
	"io"
	"os"
	"testing"
)

func TestSpoolKeepsSmallDocumentsInMemoryAndSpillsLargeOnes(t *testing.T) {
	for _, size := range []int{0, 10, spoolMemory, spoolMemory + 1, 3*spoolMemory + 17} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		s := &spool{}
		// Several writes, as io.Copy makes them.
		for off := 0; off < len(data); off += 32 << 10 {
			if _, err := s.Write(data[off:min(off+32<<10, len(data))]); err != nil {
				t.Fatal(err)
			}
		}
		if spilled := s.file != nil; spilled != (size > spoolMemory) {
			t.Errorf("size %d: spilled=%v", size, spilled)
		}
		for pass := range 2 { // archive, then normalise
			r, err := s.Reader()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			if !bytes.Equal(got, data) {
				t.Fatalf("size %d pass %d: got %d bytes back, want %d identical", size, pass, len(got), size)
			}
		}
		name := ""
		if s.file != nil {
			name = s.file.Name()
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if name != "" {
			if _, err := os.Stat(name); !os.IsNotExist(err) {
				t.Errorf("size %d: temporary file left behind", size)
			}
		}
	}
}
