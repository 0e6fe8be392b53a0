package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// TestTimelineSweepSettings: the remote sweep is off by default, and each bad sweep variable is named.
func TestTimelineSweepSettings(t *testing.T) {
	t.Parallel()
	load := func(env map[string]string) (app.IntelligenceSettings, error) {
		var s app.IntelligenceSettings
		err := config.Load(func(k string) string { return env[k] }, "VERIFICATION_", &s)
		return s, err
	}
	s, err := load(nil)
	if err != nil || s.SurfaceSweep || s.SurfaceSweepInterval != 24*time.Hour || s.SurfaceSweepTick != time.Minute ||
		s.SurfaceSweepConcurrency != 4 || s.SurfaceSweepBatch != 100 {
		t.Errorf("defaults: got %+v, %v", s, err)
	}
	bad := map[string]string{
		"VERIFICATION_SURFACE_SWEEP_INTERVAL":    "10ms",
		"VERIFICATION_SURFACE_SWEEP_TICK":        "1ms",
		"VERIFICATION_SURFACE_SWEEP_CONCURRENCY": "0",
		"VERIFICATION_SURFACE_SWEEP_BATCH":       "100000",
	}
	_, err = load(bad)
	for v := range bad {
		var ve *config.VarError
		found := false
		for _, e := range flatten(err) {
			if errors.As(e, &ve) && ve.Var == v {
				found = true
			}
		}
		if !found {
			t.Errorf("got %v, want a problem with %s", err, v)
		}
	}
}
