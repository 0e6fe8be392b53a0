// Package policysignal turns the ingestion service's published payer-policy changes into
// prior-authorization signals: it stores each policy.change event once, keeps an in-memory index of
// them by organization, and matches a claim's payer (through the admin-managed payer-to-organization
// mapping) and codes against it.
//
// Its admin routes are the signals area's (signals.proto, api/signals.go, store/signals.go); the
// package says policysignal because model.Signals already names a claim's matched policy changes as
// model inputs, and signals alone would not say which.
package policysignal

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// Change types (the ingestion service's change types) that move the prior-authorization model's policy features.
const (
	PriorAuthAdded   = "prior_auth_added"
	PriorAuthRemoved = "prior_auth_removed"
)

// Signal is a published policy change.
type Signal struct {
	ChangeEventID, Organization, ChangeType string
	AffectedCodes                           []string
	Summary, PolicyURL                      string
	Confidence                              float64
	PublishedAt, ReceivedAt                 time.Time
}

// Mapping maps a payer id to the organization that publishes its policies.
type Mapping struct {
	PayerID      int64
	Organization string
	UpdatedAt    time.Time
}

// Store persists signals and mappings. Insert reports whether the signal was new.
type Store interface {
	InsertPolicySignal(ctx context.Context, s Signal) (bool, error)
	// PolicySignals lists an organization's signals (all of them for ""), newest first; limit 0 is
	// no limit.
	PolicySignals(ctx context.Context, organization string, limit int) ([]Signal, error)
	PayerMappings(ctx context.Context) ([]Mapping, error)
	PutPayerMapping(ctx context.Context, payerID int64, organization string) (Mapping, error)
	// DeletePayerMapping returns fault.ErrNotFound when the payer had no mapping.
	DeletePayerMapping(ctx context.Context, payerID int64) error
}

// Index is the in-memory view every scoring request reads. It is rebuilt from the store (Reload) on
// start and periodically, because the durable consumer delivers each event to one replica only; the
// replica that consumed an event also adds it at once.
type Index struct {
	mu       sync.RWMutex
	payerOrg map[int64]string
	byOrg    map[string][]Signal
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{payerOrg: map[int64]string{}, byOrg: map[string][]Signal{}}
}

// Reload replaces the index with the store's current mappings and signals.
func (ix *Index) Reload(ctx context.Context, st Store) error {
	mappings, err := st.PayerMappings(ctx)
	if err != nil {
		return err
	}
	signals, err := st.PolicySignals(ctx, "", 0)
	if err != nil {
		return err
	}
	payerOrg := make(map[int64]string, len(mappings))
	for _, m := range mappings {
		payerOrg[m.PayerID] = m.Organization
	}
	byOrg := map[string][]Signal{}
	for _, s := range signals {
		byOrg[s.Organization] = append(byOrg[s.Organization], s)
	}
	ix.mu.Lock()
	ix.payerOrg, ix.byOrg = payerOrg, byOrg
	ix.mu.Unlock()
	return nil
}

// Add puts one newly stored signal into the index.
func (ix *Index) Add(s Signal) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	list := ix.byOrg[s.Organization]
	if slices.ContainsFunc(list, func(o Signal) bool { return o.ChangeEventID == s.ChangeEventID }) {
		return
	}
	list = append(list, s)
	sort.SliceStable(list, func(i, j int) bool { return list[i].PublishedAt.After(list[j].PublishedAt) })
	ix.byOrg[s.Organization] = list
}

// SetMapping updates one payer's organization (empty removes it) after an admin change.
func (ix *Index) SetMapping(payerID int64, organization string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if organization == "" {
		delete(ix.payerOrg, payerID)
		return
	}
	ix.payerOrg[payerID] = organization
}

// Match is a signal that applies to a claim, with the claim codes it names.
type Match struct {
	Signal
	MatchedCodes []string
}

// Match returns the signals of the claim's payer's organization that name the claim's CPT/HCPCS or
// ICD-10 code, newest first, and the model features they set. A signal naming no code is too broad to
// bind to one claim and is not matched. When both an addition and a removal of prior authorization
// match, the newest one wins: it is the payer's current rule.
func (ix *Index) Match(c *claim.Claim) ([]Match, model.Signals) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	org, ok := ix.payerOrg[c.PayerID]
	if !ok {
		return nil, model.Signals{}
	}
	var out []Match
	var features model.Signals
	decided := false
	for _, s := range ix.byOrg[org] {
		var matched []string
		for _, code := range s.AffectedCodes {
			if code == c.CPTCode || sameICD(code, c.ICD10Code) {
				matched = append(matched, code)
			}
		}
		if len(matched) == 0 {
			continue
		}
		out = append(out, Match{Signal: s, MatchedCodes: matched})
		if !decided && (s.ChangeType == PriorAuthAdded || s.ChangeType == PriorAuthRemoved) {
			features.PriorAuthAdded = s.ChangeType == PriorAuthAdded
			features.PriorAuthRemoved = s.ChangeType == PriorAuthRemoved
			decided = true
		}
	}
	return out, features
}

// sameICD compares two ICD-10 codes ignoring the dot, which some policy documents leave out
// ("M545" for "M54.5"), without allocating: it runs for every code of every candidate signal.
func sameICD(a, b string) bool {
	i, j, matched := 0, 0, false
	for {
		for i < len(a) && a[i] == '.' {
			i++
		}
		for j < len(b) && b[j] == '.' {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b) && matched
		}
		if a[i] != b[j] {
			return false
		}
		i, j, matched = i+1, j+1, true
	}
}
