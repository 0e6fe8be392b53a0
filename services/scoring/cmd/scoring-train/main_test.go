package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunWritesArtifactsAndRemovesStaleOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"denial-0.0.1.json": "{}",   // a model an earlier run wrote
		"notes.txt":         "mine", // not an artifact: must survive
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout strings.Builder
	if err := run([]string{"-out", dir, "-rows", "2000", "-seed", "3"}, &stdout); err != nil {
		t.Fatalf("run: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, want := range []string{"README.md", "denial-0.3.3.json", "denial-0.3.3-cms_v1.card.md", "prior_auth-0.2.3-prior-auth-on-file.reliability.png", "reimbursement-0.2.1.json", "notes.txt"} {
		if !slices.Contains(names, want) {
			t.Errorf("got files %v, want %s among them", names, want)
		}
	}
	if slices.Contains(names, "denial-0.0.1.json") {
		t.Errorf("got stale denial-0.0.1.json kept")
	}
	if !strings.Contains(stdout.String(), "healthcare.denial 0.3.3 cms_v1") {
		t.Errorf("got output %q, want a metrics line per model", stdout.String())
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	var stdout strings.Builder
	if err := run([]string{"-rows", "10", "-out", t.TempDir()}, &stdout); err == nil {
		t.Error("run -rows 10: got no error")
	}
	if err := run([]string{"-bogus"}, &stdout); err == nil {
		t.Error("run -bogus: got no error")
	}
}

func TestRunWritesTheData(t *testing.T) {
	t.Parallel()
	out, data := t.TempDir(), t.TempDir()
	var stdout strings.Builder
	if err := run([]string{"-out", out, "-rows", "2000", "-seed", "3", "-data", data}, &stdout); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, p := range []string{"synthetic_v1", "cms_v1", "commercial_beta"} {
		b, err := os.ReadFile(filepath.Join(data, "synth-"+p+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2001 || !strings.HasPrefix(lines[0], "split,external_claim_id,") || !strings.Contains(lines[0], "p_denied_true") ||
			!strings.HasPrefix(lines[1], "train,"+p+"-") || !strings.HasPrefix(lines[2000], "test,") {
			t.Errorf("%s: got %d lines, header %q, first %q", p, len(lines), lines[0], lines[1])
		}
	}
}
