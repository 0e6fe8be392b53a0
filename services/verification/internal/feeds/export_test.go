package feeds

import (
	"context"
	"time"
)

// ExportIfOlder is the periodic export's step: it exports unless the newest artifact is younger
// than minAge, at the clock now.
func (e *Exporter) ExportIfOlder(ctx context.Context, minAge time.Duration, now func() time.Time) ([]Artifact, error) {
	e.now = now
	return e.exportAll(ctx, minAge)
}
