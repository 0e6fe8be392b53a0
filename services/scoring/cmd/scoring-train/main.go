// Command scoring-train trains the scoring models on synthetic claims and writes their artifacts
// (model files, model cards, reliability diagrams), which package model embeds:
//
//	go run ./services/scoring/cmd/scoring-train -out services/scoring/internal/model/artifacts
//
// The same -seed and -rows always write the same bytes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/train"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "scoring-train: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scoring-train", flag.ContinueOnError)
	out := fs.String("out", "services/scoring/internal/model/artifacts", "artifacts directory")
	seed := fs.Uint64("seed", train.DefaultSeed, "seed of the synthetic populations")
	rows := fs.Int("rows", train.DefaultRows, "claims per population (split 60/20/20)")
	data := fs.String("data", "", "also write each population's claims, labels, splits and true probabilities as synth-<profile>.csv to this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	res, err := train.Run(train.Config{Seed: *seed, RowsPerPopulation: *rows})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := removeStale(*out, res.Files); err != nil {
		return err
	}
	total := 0
	for _, f := range res.Files {
		if err := os.WriteFile(filepath.Join(*out, f.Name), f.Data, 0o644); err != nil {
			return err
		}
		total += len(f.Data)
	}
	fmt.Fprintf(stdout, "wrote %d files (%d bytes) to %s in %s\n", len(res.Files), total, *out, time.Since(start).Round(time.Millisecond))
	if *data != "" {
		if err := writeData(*data, train.Config{Seed: *seed, RowsPerPopulation: *rows}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote the synthetic populations to %s\n", *data)
	}
	for _, c := range res.Cards {
		name := string(c.Workflow) + " " + c.Version
		if c.Profile != "" {
			name += " " + string(c.Profile)
		}
		switch {
		case c.Classification != nil:
			m := c.Classification
			fmt.Fprintf(stdout, "%-48s AUC %.4f  Brier %.4f  ECE %.4f (raw %.4f)\n", name, m.AUC, m.Brier, m.ECE, m.ECERaw)
		case c.Regression != nil:
			fmt.Fprintf(stdout, "%-48s MAE %.2f  MAPE %.4f\n", name, c.Regression.MAE, c.Regression.MAPE)
		}
	}
	return nil
}

// removeStale deletes artifacts a previous run wrote and this one did not, so a renamed model leaves
// no orphan for the runtime to embed. Only files named like artifacts are touched, so a mistaken -out
// cannot empty an unrelated directory.
func removeStale(dir string, keep []train.File) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	wanted := make(map[string]bool, len(keep))
	for _, f := range keep {
		wanted[f.Name] = true
	}
	var errs []error
	for _, e := range entries {
		if e.Type().IsRegular() && isArtifact(e.Name()) && !wanted[e.Name()] {
			errs = append(errs, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

func isArtifact(name string) bool {
	for _, prefix := range []string{"denial-", "prior_auth-", "reimbursement-"} {
		if strings.HasPrefix(name, prefix) &&
			(strings.HasSuffix(name, ".json") || strings.HasSuffix(name, model.CardMarkdownSuffix) || strings.HasSuffix(name, model.ReliabilitySuffix)) {
			return true
		}
	}
	return false
}

// writeData writes each population as synth-<profile>.csv into dir (train.WriteData).
func writeData(dir string, cfg train.Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, p := range model.Profiles {
		f, err := os.Create(filepath.Join(dir, "synth-"+string(p)+".csv"))
		if err != nil {
			return err
		}
		err = train.WriteData(f, p, cfg)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}
