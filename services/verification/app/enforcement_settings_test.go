package app

import (
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/config"
)

func TestEnforcementSettings(t *testing.T) {
	var s EnforcementSettings
	if err := config.Load(func(string) string { return "" }, EnvPrefix, &s); err != nil || s.SnapshotsPerHour != 60 {
		t.Fatalf("defaults: %+v %v, want 60 snapshots an hour", s, err)
	}
	for _, bad := range []string{"0", "-1", "100001"} {
		err := config.Load(func(k string) string {
			if k == EnvPrefix+"ENFORCEMENT_SNAPSHOTS_PER_HOUR" {
				return bad
			}
			return ""
		}, EnvPrefix, &s)
		if err == nil || !strings.Contains(err.Error(), EnvPrefix+"ENFORCEMENT_SNAPSHOTS_PER_HOUR:") {
			t.Errorf("ENFORCEMENT_SNAPSHOTS_PER_HOUR=%s: got %v, want an error naming the variable", bad, err)
		}
	}
}
