package audit

import "context"

// httpSurface checks OAuth metadata and the server card (placeholder until the checks land).
func (r *run) httpSurface(ctx context.Context) {}
