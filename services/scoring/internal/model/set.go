package model

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// artifacts are written by cmd/scoring-train and committed; see MODELS.md.
//
//go:embed artifacts
var artifacts embed.FS

// Artifact file name suffixes: a model file is <workflow>-<version>.json, a card
// <model>.card.json, its markdown <model>.card.md and its diagram <model>.reliability.png.
const (
	CardSuffix         = ".card.json"
	CardMarkdownSuffix = ".card.md"
	ReliabilitySuffix  = ".reliability.png"
)

// Set is every model version in the artifacts. It is immutable and safe for concurrent use.
type Set struct {
	denial        map[denialKey]*Classifier
	priorAuth     map[string]*Classifier
	reimbursement map[string]*Regressor
	cards         []Card
}

type denialKey struct {
	version string
	profile Profile
}

var loadEmbedded = sync.OnceValues(func() (*Set, error) {
	sub, err := fs.Sub(artifacts, "artifacts")
	if err != nil {
		return nil, err
	}
	return LoadFS(sub)
})

// Load returns the models embedded in the binary. Every call returns the same Set.
func Load() (*Set, error) { return loadEmbedded() }

// LoadFS reads model files, cards and diagrams from the top level of fsys; other files are ignored.
func LoadFS(fsys fs.FS) (*Set, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	s := &Set{denial: map[denialKey]*Classifier{}, priorAuth: map[string]*Classifier{}, reimbursement: map[string]*Regressor{}}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || path.Ext(name) != ".json" {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, CardSuffix) {
			err = s.addCard(fsys, data)
		} else {
			err = s.addModel(data)
		}
		if err != nil {
			return nil, fmt.Errorf("model artifact %s: %w", name, err)
		}
	}
	return s, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (s *Set) addModel(data []byte) error {
	var mf ModelFile
	if err := decodeStrict(data, &mf); err != nil {
		return err
	}
	switch mf.Workflow {
	case claim.Denial:
		for i := range mf.Classifiers {
			a := &mf.Classifiers[i]
			if _, ok := ParseProfile(string(a.Profile)); !ok {
				return fmt.Errorf("denial model with profile %q", a.Profile)
			}
			c, err := NewClassifier(mf.Version, a)
			if err != nil {
				return fmt.Errorf("profile %s: %w", a.Profile, err)
			}
			s.denial[denialKey{mf.Version, a.Profile}] = c
		}
	case claim.PriorAuth:
		if len(mf.Classifiers) != 1 {
			return fmt.Errorf("prior-auth model file holds %d classifiers, want 1", len(mf.Classifiers))
		}
		c, err := NewClassifier(mf.Version, &mf.Classifiers[0])
		if err != nil {
			return err
		}
		s.priorAuth[mf.Version] = c
	case claim.Reimbursement:
		if mf.Regressor == nil {
			return fmt.Errorf("reimbursement model file without a regressor")
		}
		r, err := NewRegressor(mf.Version, mf.Regressor)
		if err != nil {
			return err
		}
		s.reimbursement[mf.Version] = r
	default:
		return fmt.Errorf("unknown workflow %q", mf.Workflow)
	}
	return nil
}

func (s *Set) addCard(fsys fs.FS, data []byte) error {
	var c Card
	if err := decodeStrict(data, &c); err != nil {
		return err
	}
	if c.ReliabilityPNG != "" {
		png, err := fs.ReadFile(fsys, c.ReliabilityPNG)
		if err != nil {
			return err
		}
		c.ReliabilityPNGData = png
	}
	i, _ := slices.BinarySearchFunc(s.cards, c, compareCards)
	s.cards = slices.Insert(s.cards, i, c)
	return nil
}

// compareCards orders cards by workflow in the README's order, then version, then profile.
func compareCards(a, b Card) int {
	if c := slices.Index(claim.Workflows, a.Workflow) - slices.Index(claim.Workflows, b.Workflow); c != 0 {
		return c
	}
	if c := strings.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	return slices.Index(Profiles, a.Profile) - slices.Index(Profiles, b.Profile)
}

// Denial returns the denial model of a version and profile.
func (s *Set) Denial(version string, p Profile) (*Classifier, bool) {
	c, ok := s.denial[denialKey{version, p}]
	return c, ok
}

// PriorAuth returns the prior-auth model of a version.
func (s *Set) PriorAuth(version string) (*Classifier, bool) {
	c, ok := s.priorAuth[version]
	return c, ok
}

// Reimbursement returns the reimbursement model of a version.
func (s *Set) Reimbursement(version string) (*Regressor, bool) {
	r, ok := s.reimbursement[version]
	return r, ok
}

// Cards returns the model cards ordered by workflow, version and profile. The slice is shared: do not
// modify it.
func (s *Set) Cards() []Card { return s.cards }
