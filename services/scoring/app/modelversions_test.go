package app

import (
	"strings"
	"testing"
)

func TestModelVersionSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{"SCORING_DATABASE_URL": "postgres://localhost/scoring", "SCORING_ADMIN_TOKEN": adminToken}
	for _, c := range []struct {
		name  string
		env   map[string]string
		wants []string
	}{
		{"defaults", nil, nil},
		{"second generation", map[string]string{"SCORING_DENIAL_MODEL_VERSION": "0.3.4",
			"SCORING_PRIOR_AUTH_MODEL_VERSION": "0.2.4-prior-auth-on-file", "SCORING_REIMBURSEMENT_MODEL_VERSION": "0.2.2"}, nil},
		{"published versions named", map[string]string{"SCORING_DENIAL_MODEL_VERSION": "0.3.3"}, nil},
		{"unknown versions", map[string]string{"SCORING_DENIAL_MODEL_VERSION": "9.9.9",
			"SCORING_PRIOR_AUTH_MODEL_VERSION": "0.3.4", "SCORING_REIMBURSEMENT_MODEL_VERSION": "0.2.0"},
			[]string{"SCORING_DENIAL_MODEL_VERSION", "SCORING_PRIOR_AUTH_MODEL_VERSION", "SCORING_REIMBURSEMENT_MODEL_VERSION"}},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.env {
			env[k] = v
		}
		cfg, err := loadConfig(func(k string) string { return env[k] })
		if len(c.wants) == 0 {
			if err != nil {
				t.Errorf("%s: %v, want a valid configuration", c.name, err)
			} else if got := defaultVersions(cfg.Settings); got.Denial != c.env["SCORING_DENIAL_MODEL_VERSION"] {
				t.Errorf("%s: got default versions %+v", c.name, got)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted, want an error naming %v", c.name, c.wants)
			continue
		}
		for _, v := range c.wants {
			if !strings.Contains(err.Error(), v+":") {
				t.Errorf("%s: error %q does not name %s", c.name, err, v)
			}
		}
	}
}
