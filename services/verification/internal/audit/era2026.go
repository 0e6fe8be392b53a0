package audit

import "context"

// stateless probes the 2026-07-28 era (placeholder until the checks land).
func (r *run) stateless(ctx context.Context) eraOutcome {
	return eraOutcome{result: EraResult{Era: EraStateless, Status: EraNotSupported}}
}
