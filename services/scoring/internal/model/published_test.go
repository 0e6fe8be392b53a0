package model_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
)

// publishedAnswers is the digest of what the published versions (denial 0.3.3, prior auth
// 0.2.3-prior-auth-on-file, reimbursement 0.2.1) answer for 9,000 synthetic claims and a few odd ones:
// scores, factors, drift, tiers, support levels, estimates and detected profiles, as the code before the
// second generation computed them. A published version never changes its answers; a change to the
// runtime that moves any of them fails here. (Adding a field to Result or Estimate changes their %v
// form: recompute the digest with the code of the published release, never with the new code.)
const publishedAnswers = "e5f95fb245e5601250dbcbcdedf04d555a4a4fd4422b162fa8766e2fb9ac0c5b"

func TestPublishedVersionsAnswerAsPublished(t *testing.T) {
	t.Parallel()
	if got := publishedAnswersDigest(t); got != publishedAnswers {
		t.Errorf("got answers digest %s, want %s: a published model version changed its answers", got, publishedAnswers)
	}
}

func publishedAnswersDigest(t testing.TB) string {
	s, err := model.Load()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	extra := []claim.Claim{
		{PayerID: 1001, CPTCode: "36415", ICD10Code: "D64.9", BilledAmount: 10, Units: 1, PlaceOfService: "81", NetworkStatus: "in_network"},
		{PayerID: 4242, CPTCode: "00100", ICD10Code: "Z00.0", BilledAmount: 500, Units: 3, PlaceOfService: "99", NetworkStatus: "weird"},
		{PayerID: 2001, CPTCode: "99213", ICD10Code: "I10.0", BilledAmount: 900, Units: 6, NetworkStatus: "out_of_network"},
	}
	for _, p := range model.Profiles {
		recs, err := synth.Generate(p, 3000, 424242)
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			writeAnswers(t, h, s, &recs[i].Claim, recs[i].Signals)
		}
	}
	for i := range extra {
		writeAnswers(t, h, s, &extra[i], model.Signals{PriorAuthAdded: i == 0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeAnswers(t testing.TB, h hash.Hash, s *model.Set, c *claim.Claim, sig model.Signals) {
	var res model.Result
	for _, p := range model.Profiles {
		d, ok := s.Denial("0.3.3", p)
		if !ok {
			t.Fatal("denial 0.3.3 missing")
		}
		d.Score(c, sig, &res)
		fmt.Fprintf(h, "%v %s\n", res, d.Tier(res.Probability))
	}
	pa, _ := s.PriorAuth("0.2.3-prior-auth-on-file")
	pa.Score(c, sig, &res)
	fmt.Fprintf(h, "%v %s %s\n", res, pa.Tier(res.Probability), pa.SupportLevel(c.PayerID))
	r, _ := s.Reimbursement("0.2.1")
	var est model.Estimate
	r.Estimate(c, &est)
	fmt.Fprintf(h, "%v\n", est)
	p, ok := model.DetectProfile(c)
	fmt.Fprintf(h, "%s %v\n", p, ok)
}
