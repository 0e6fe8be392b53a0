package audit

import "context"

// stateful probes the 2025-11-25 era (placeholder until the checks land).
func (r *run) stateful(ctx context.Context, m mode) eraOutcome {
	return eraOutcome{result: EraResult{Era: EraStateful, Status: EraNotSupported}}
}
