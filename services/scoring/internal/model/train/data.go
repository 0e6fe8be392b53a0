package train

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
)

// DataColumns are the columns WriteData writes: the split, the claim, its labels, and the generator's
// own view (the true and payload-only denial probabilities, the prior-auth probability, the mean log
// allowed/billed ratio and the overcharge), so a model trained elsewhere on the same claims can be
// compared with the oracle.
var DataColumns = []string{
	"split", "external_claim_id", "service_date", "provider_id", "payer_id", "cpt_code", "icd10_code", "billed_amount",
	"units", "place_of_service", "network_status", "policy_prior_auth_added", "policy_prior_auth_removed",
	"denied", "prior_auth_required", "allowed_amount",
	"p_denied_true", "p_denied_payload_only", "p_prior_auth_required", "allowed_log_ratio_mean", "overcharge",
}

// WriteData writes population p of cfg as CSV (header DataColumns), in generation order, each claim
// tagged with the split training put it in. The same cfg always writes the same bytes.
func WriteData(w io.Writer, p model.Profile, cfg Config) error {
	recs, err := synth.Generate(p, cfg.RowsPerPopulation, cfg.Seed)
	if err != nil {
		return err
	}
	s := split(recs)
	cw := csv.NewWriter(w)
	if err := cw.Write(DataColumns); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	b := func(x bool) string { return strconv.FormatBool(x) }
	row := make([]string, len(DataColumns))
	for i := range recs {
		r := &recs[i]
		name := "test"
		switch {
		case i < len(s.train):
			name = "train"
		case i < len(s.train)+len(s.calibration):
			name = "calibration"
		}
		c := &r.Claim
		row = append(row[:0], name, c.ExternalClaimID, c.ServiceDate.Format("2006-01-02"), strconv.FormatInt(c.ProviderID, 10),
			strconv.FormatInt(c.PayerID, 10), c.CPTCode, c.ICD10Code, f(c.BilledAmount), f(c.Units), c.PlaceOfService, c.NetworkStatus,
			b(r.Signals.PriorAuthAdded), b(r.Signals.PriorAuthRemoved), b(r.Denied), b(r.PriorAuthRequired), f(r.AllowedAmount),
			f(r.DenialProbability), f(r.DenialPayloadProbability), f(r.PriorAuthProbability), f(r.AllowedLogRatio), f(r.Overcharge))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
