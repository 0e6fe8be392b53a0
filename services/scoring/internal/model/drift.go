package model

import (
	"fmt"
	"math/bits"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// Drift flags the ways a claim lies outside a model's training population. A flagged score is still
// valid; the README lets the caller's confidence be downgraded and the decision log carry the flags.
type Drift uint8

// The drift flags.
const (
	// DriftBilledAmount flags a per-unit charge outside the training range of its code family.
	DriftBilledAmount Drift = 1 << iota
	// DriftUnits flags units outside the training range of the code family.
	DriftUnits
	// DriftUnseenCPTFamily flags a code family that never occurred in training; amount and units are
	// then not checked, having no range.
	DriftUnseenCPTFamily
	// DriftUnseenPayer flags a payer id that never occurred in training.
	DriftUnseenPayer
	// DriftUnseenPlaceOfService flags a place-of-service code that never occurred in training.
	DriftUnseenPlaceOfService
)

var driftNames = [...]string{"billed_amount_out_of_range", "units_out_of_range", "unseen_cpt_family", "unseen_payer", "unseen_place_of_service"}

// Names returns the snake_case names of the set flags, lowest bit first, for logs and explanations.
func (d Drift) Names() []string {
	names := make([]string, 0, bits.OnesCount8(uint8(d)))
	for i, name := range driftNames {
		if d&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// reference is Reference in the form a zero-allocation check needs.
type reference struct {
	families  [NumFamilies]FamilyRange
	seen      [NumFamilies]bool
	pos       [NumPlacesOfService]bool
	payerRows map[int64]int
	// codeAmount: the amount ranges are of Traits.CodeAmount (Reference.AmountBasis "code").
	codeAmount bool
}

func newReference(r Reference) (reference, error) {
	ref := reference{payerRows: make(map[int64]int, len(r.Payers))}
	switch r.AmountBasis {
	case "":
	case AmountBasisCode:
		ref.codeAmount = true
	default:
		return reference{}, fmt.Errorf("reference: unknown amount basis %q", r.AmountBasis)
	}
	for _, p := range r.Payers {
		ref.payerRows[p.PayerID] = p.Rows
	}
	for _, fr := range r.Families {
		f, ok := ParseFamily(fr.Family)
		if !ok || f == FamilyOther {
			return reference{}, fmt.Errorf("reference: unknown code family %q", fr.Family)
		}
		ref.families[f], ref.seen[f] = fr, true
	}
	for _, code := range r.PlacesOfService {
		i := placeOfServiceIndex(code)
		if i < 0 {
			return reference{}, fmt.Errorf("reference: unknown place of service %q", code)
		}
		ref.pos[i] = true
	}
	return ref, nil
}

func (r *reference) check(cl *claim.Claim, t Traits) Drift {
	var d Drift
	if r.seen[t.Family] {
		fr := &r.families[t.Family]
		amount := t.Amount
		if r.codeAmount {
			amount = t.CodeAmount
		}
		if amount < fr.AmountLow || amount > fr.AmountHigh {
			d |= DriftBilledAmount
		}
		if t.Units < fr.UnitsLow || t.Units > fr.UnitsHigh {
			d |= DriftUnits
		}
	} else {
		d |= DriftUnseenCPTFamily
	}
	if r.payerRows[cl.PayerID] == 0 {
		d |= DriftUnseenPayer
	}
	if t.PlaceOfService == -1 || t.PlaceOfService >= 0 && !r.pos[t.PlaceOfService] {
		d |= DriftUnseenPlaceOfService
	}
	return d
}
