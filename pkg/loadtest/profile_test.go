package loadtest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

func TestProfileWritesAProfileAndATrace(t *testing.T) {
	dir := t.TempDir()
	cpu, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "run.trace")
	stop, err := loadtest.Profile(cpu, tr)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for path, magic := range map[string][]byte{cpu: {0x1f, 0x8b}, tr: []byte("go 1.")} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, magic) {
			t.Errorf("%s starts with %q, want %q", filepath.Base(path), b[:min(len(b), 8)], magic)
		}
	}
}

func TestProfileRecordsNothingWithoutPaths(t *testing.T) {
	stop, err := loadtest.Profile("", "")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	// A second profile can start: the first started nothing, or stopped what it started.
	stop, err = loadtest.Profile(filepath.Join(t.TempDir(), "cpu.prof"), "")
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

func TestProfileFailsOnAFileItCannotCreate(t *testing.T) {
	dir := t.TempDir()
	if _, err := loadtest.Profile(filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "missing", "run.trace")); err == nil {
		t.Fatal("Profile with a trace into a missing directory succeeded")
	}
	// The failed call stopped the CPU profile it had started: another can start.
	stop, err := loadtest.Profile(filepath.Join(dir, "again.prof"), "")
	if err != nil {
		t.Fatalf("a profile after the failed one: %v", err)
	}
	stop()
}
