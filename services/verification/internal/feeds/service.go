package feeds

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Limits of the artifact listing (README, "Data feeds": 1..100, default 20).
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Service runs the data-feed reads.
type Service struct {
	store  Store
	signer *Signer
}

// NewService returns the data-feed reads.
func NewService(store Store, signer *Signer) *Service { return &Service{store: store, signer: signer} }

// CatalogItem is a dataset with its artifacts' count and newest time.
type CatalogItem struct {
	Dataset
	CatalogEntry
}

// Catalog lists every dataset.
func (s *Service) Catalog(ctx context.Context) ([]CatalogItem, error) {
	entries, err := s.store.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]CatalogItem, 0, len(Datasets))
	for _, d := range Datasets {
		out = append(out, CatalogItem{Dataset: d, CatalogEntry: entries[d.Name]})
	}
	return out, nil
}

// List returns one page of a dataset's artifacts and the cursor of the next page (nil on the last).
func (s *Service) List(ctx context.Context, q Query) ([]Artifact, *time.Time, error) {
	if _, ok := DatasetNamed(q.Dataset); !ok {
		return nil, nil, fault.ErrNotFound
	}
	want := q.Limit
	q.Limit = want + 1
	arts, err := s.store.ListArtifacts(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	if len(arts) <= want {
		return arts, nil, nil
	}
	arts = arts[:want]
	next := arts[want-1].CreatedAt
	return arts, &next, nil
}

// Download returns an artifact and a signed path (with query) that serves it until the returned time.
func (s *Service) Download(ctx context.Context, dataset string, id uuid.UUID) (Artifact, string, time.Time, error) {
	a, err := s.store.GetArtifact(ctx, dataset, id)
	if err != nil {
		return a, "", time.Time{}, err
	}
	path, exp := s.signer.Sign(a.ID)
	return a, path, exp, nil
}
