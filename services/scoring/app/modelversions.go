package app

import (
	"errors"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// defaultVersions are the settings' default model versions.
func defaultVersions(s Settings) decision.Versions {
	return decision.Versions{Denial: s.DenialModelVersion, PriorAuth: s.PriorAuthModelVersion, Reimbursement: s.ReimbursementModelVersion}
}

// modelVersions refuses a default model version the embedded models do not serve.
func modelVersions(prefix string, s *Settings) error {
	if defaultVersions(*s) == (decision.Versions{}) {
		return nil
	}
	models, err := model.Load()
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range []struct {
		name string
		v    decision.Versions
	}{
		{"DENIAL_MODEL_VERSION", decision.Versions{Denial: s.DenialModelVersion}},
		{"PRIOR_AUTH_MODEL_VERSION", decision.Versions{PriorAuth: s.PriorAuthModelVersion}},
		{"REIMBURSEMENT_MODEL_VERSION", decision.Versions{Reimbursement: s.ReimbursementModelVersion}},
	} {
		if err := decision.CheckVersions(models, c.v); err != nil {
			errs = append(errs, config.Invalid(prefix+c.name, "%v", err))
		}
	}
	return errors.Join(errs...)
}
