package billing_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// parsed is a processor whose every delivery is the event it holds.
type parsed struct{ billing.Event }

func (parsed) CreateCheckout(context.Context, billing.CheckoutRequest) (billing.Checkout, error) {
	return billing.Checkout{}, errors.New("not in this test")
}

func (p parsed) ParseEvent([]byte, string) (billing.Event, error) { return p.Event, nil }

// steps is a store that writes down the steps of each event transaction, and fails the one named
// failAt.
type steps struct {
	billing.Store // the lookups, which the webhook does not use
	known         map[string]bool
	accounts      map[string]billing.Account
	failAt        string
	done          []string
	forgotten     []string
}

var errStep = errors.New("step failed")

func (s *steps) BeginEvent(context.Context) (billing.EventTx, error) { return &stepTx{s: s}, nil }

func (s *steps) ForgetAccount(accountID string) { s.forgotten = append(s.forgotten, accountID) }

type stepTx struct {
	s         *steps
	committed bool
}

func (tx *stepTx) step(name string) error {
	tx.s.done = append(tx.s.done, name)
	if name == tx.s.failAt {
		return errStep
	}
	return nil
}

func (tx *stepTx) RecordEvent(_ context.Context, e billing.Event) (bool, error) {
	return !tx.s.known[e.ID], tx.step("record")
}

func (tx *stepTx) LockEventAccount(_ context.Context, e billing.Event) (billing.Account, error) {
	if err := tx.step("lock"); err != nil {
		return billing.Account{}, err
	}
	a, ok := tx.s.accounts[e.AccountID]
	if !ok {
		return a, fault.ErrNotFound
	}
	return a, nil
}

func (tx *stepTx) SetPlan(_ context.Context, _, plan string) error { return tx.step("plan " + plan) }

func (tx *stepTx) NameAccount(_ context.Context, _, email string) error {
	return tx.step("name " + email)
}

func (tx *stepTx) SaveBilling(context.Context, string, billing.Billing) error {
	return tx.step("billing")
}

func (tx *stepTx) SetEventOutcome(_ context.Context, _ string, o billing.Outcome, _ string) error {
	return tx.step("outcome " + string(o))
}

func (tx *stepTx) Commit(context.Context) error {
	tx.committed = true
	return tx.step("commit")
}

func (tx *stepTx) Rollback(context.Context) error {
	if tx.committed {
		return nil
	}
	return tx.step("rollback")
}

// TestWebhookOwnsItsTransaction: the use case runs the store's steps in one transaction that it
// commits only when every step succeeded, and forgets a cached plan only after the commit.
func TestWebhookOwnsItsTransaction(t *testing.T) {
	t.Parallel()
	paid := billing.Event{ID: "evt_1", Type: billing.EventCheckoutCompleted, Created: time.Now(),
		AccountID: "acct_1", CustomerEmail: "a@example.com", SubscriptionID: "sub_1", PaymentSettled: true}
	trial := billing.Account{ID: "acct_1", Plan: billing.PlanTrial}
	for _, tc := range []struct {
		name      string
		known     bool
		account   bool
		failAt    string
		want      []string
		outcome   billing.Outcome
		forgotten bool
	}{
		{name: "a new event of a known account", account: true, outcome: billing.OutcomeUpgraded, forgotten: true,
			want: []string{"record", "lock", "plan paid", "name a@example.com", "billing", "outcome upgraded", "commit"}},
		{name: "a replayed event", known: true, account: true, outcome: billing.OutcomeDuplicate,
			want: []string{"record", "commit"}},
		{name: "an event of an unknown account", outcome: billing.OutcomeUnknownAccount,
			want: []string{"record", "lock", "outcome unknown_account", "commit"}},
		{name: "a step that fails", account: true, failAt: "billing",
			want: []string{"record", "lock", "plan paid", "name a@example.com", "billing", "rollback"}},
		{name: "a commit that fails", account: true, failAt: "commit",
			want: []string{"record", "lock", "plan paid", "name a@example.com", "billing", "outcome upgraded", "commit"}},
	} {
		s := &steps{known: map[string]bool{}, accounts: map[string]billing.Account{}, failAt: tc.failAt}
		if tc.known {
			s.known[paid.ID] = true
		}
		if tc.account {
			s.accounts[trial.ID] = trial
		}
		a, err := billing.New(s, parsed{paid}, s, nil).HandleWebhook(context.Background(), nil, "")
		if !slices.Equal(s.done, tc.want) {
			t.Errorf("%s: steps %q, want %q", tc.name, s.done, tc.want)
		}
		if tc.failAt != "" {
			if !errors.Is(err, errStep) || len(s.forgotten) != 0 {
				t.Errorf("%s: error %v, forgotten %v; want the step's error and no plan forgotten", tc.name, err, s.forgotten)
			}
			continue
		}
		if err != nil || a.Outcome != tc.outcome || (len(s.forgotten) == 1) != tc.forgotten {
			t.Errorf("%s: outcome %q, error %v, forgotten %v; want %q, forgotten: %v", tc.name, a.Outcome, err, s.forgotten, tc.outcome, tc.forgotten)
		}
	}
}
