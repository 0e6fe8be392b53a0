package store

import (
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// ErrNotFound is returned when the row asked for does not exist. It also matches (errors.Is) the
// not-found sentinels of the domain packages whose Store interfaces this package implements, so that
// they need no adapter and never import the store.
var ErrNotFound error = notFound{}

type notFound struct{}

func (notFound) Error() string { return "not found" }

func (notFound) Is(target error) bool {
	return target == keys.ErrNotFound || target == feedback.ErrNotFound || target == billing.ErrNotFound || target == controlplane.ErrNotFound
}
