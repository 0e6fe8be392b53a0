// Package billing upgrades trial accounts to the paid plan through a payment processor's hosted
// checkout, and keeps each account's plan in step with its subscription as the processor's webhooks
// report it (README "Billing": the same key and account move to a paid plan, in
// place). The processor is behind Processor (stripe.go implements it with stripe-go); the plan lives
// in accounts.plan, which the key cache and the meter read on every scoring request.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/stripebilling"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// Errors of the use cases.
var (
	// ErrNotConfigured is billing without processor settings: checkout and the webhook cannot work.
	ErrNotConfigured = errors.New("billing is not configured")
	// ErrNotTrial is an operator's checkout for an account that is not on the trial plan.
	ErrNotTrial = errors.New("account is not on the trial plan")
	// ErrKeyNotTrial is a key other than a trial key asking for a checkout for itself.
	ErrKeyNotTrial = errors.New("only a trial key may open a checkout")
	// ErrProcessor is the payment processor failing or refusing a call; the cause is logged only.
	ErrProcessor = stripebilling.ErrProcessor
)

// Errors of Processor.ParseEvent: a webhook the service cannot trust or read (400), which the
// processor delivers again. They are pkg/stripebilling's, which verifies the deliveries.
var (
	// ErrSignature is a webhook whose signature header is missing, malformed or does not match.
	ErrSignature = stripebilling.ErrSignature
	// ErrStale is a correctly signed webhook whose timestamp is outside the tolerance: a replay of an
	// old delivery, or a clock far off.
	ErrStale = stripebilling.ErrStale
	// ErrInvalidEvent is a signed webhook body that is not an event this service can read.
	ErrInvalidEvent = stripebilling.ErrInvalidEvent
)

// Plans billing moves accounts between. Accounts on other plans (commit, internal) are managed by
// an operator: their subscription state is recorded, their plan is never changed here.
const (
	PlanTrial = "trial"
	PlanPaid  = "paid"
)

// Account is an account with its billing state.
type Account struct {
	ID    string
	Email string
	Plan  string
	Billing
}

// Billing is an account's subscription as the processor last reported it.
type Billing struct {
	CustomerID         string
	CustomerEmail      string
	SubscriptionID     string
	SubscriptionStatus string
	// CurrentPeriodEnd is when the subscription renews (the end of its current billing period).
	CurrentPeriodEnd  *time.Time
	CancelAtPeriodEnd bool
	// SubscriptionEventAt is the creation time of the newest subscription event applied.
	SubscriptionEventAt *time.Time
	// LastPaymentResult is "succeeded", "failed" or "" (no invoice yet).
	LastPaymentResult string
	LastPaymentAt     *time.Time
	LastInvoiceID     string
}

// CheckoutRequest is what the processor needs to open a hosted checkout for an account.
type CheckoutRequest struct {
	AccountID string
	KeyID     string
	// Email prefills the checkout form; CustomerID, when the account paid before, reuses its customer.
	Email      string
	CustomerID string
}

// Checkout is an open hosted checkout session.
type Checkout struct {
	ID        string
	URL       string
	ExpiresAt time.Time
}

// Processor is the payment processor. CreateCheckout returns ErrProcessor when the processor fails;
// ParseEvent returns ErrSignature, ErrStale or ErrInvalidEvent for a webhook it cannot trust or read.
type Processor interface {
	CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error)
	ParseEvent(payload []byte, signatureHeader string) (Event, error)
}

// Store persists billing state. Lookups return fault.ErrNotFound for unknown rows.
type Store interface {
	BillingAccount(ctx context.Context, accountID string) (Account, error)
	// BillingAccountByEmail finds the account of an e-mail: the account's own, or else the newest
	// account whose checkout was paid with it.
	BillingAccountByEmail(ctx context.Context, email string) (Account, error)
	KeyByID(ctx context.Context, id string) (keys.Key, error)
	// AccountKeys lists the account's keys shown to people (the control plane's hidden agent key and
	// the rows behind legacy JWTs are left out).
	AccountKeys(ctx context.Context, accountID string) ([]keys.Key, error)
	// BeginEvent starts the transaction in which one webhook event is applied.
	BeginEvent(ctx context.Context) (EventTx, error)
}

// EventTx is the transaction of one webhook event: what its steps write commits together, so a
// delivery that fails half-way is retried whole by the processor, and one that succeeded is a
// duplicate on every redelivery. Rollback after Commit changes nothing.
type EventTx interface {
	// RecordEvent stores e's id with a pending outcome and reports whether it was new. A concurrent
	// delivery of the same event waits here until the first one's transaction ends, then finds it.
	RecordEvent(ctx context.Context, e Event) (bool, error)
	// LockEventAccount finds the event's account and locks it until the transaction ends, so that
	// concurrent events of one account apply one after the other: by e.AccountID, else by
	// e.SubscriptionID, else by e.CustomerID; fault.ErrNotFound when none matches.
	LockEventAccount(ctx context.Context, e Event) (Account, error)
	// SetPlan changes an account's plan.
	SetPlan(ctx context.Context, accountID, plan string) error
	// NameAccount gives an anonymous account an e-mail, unless another account has it.
	NameAccount(ctx context.Context, accountID, email string) error
	// SaveBilling writes an account's billing state.
	SaveBilling(ctx context.Context, accountID string, b Billing) error
	// SetEventOutcome records what applying the event did, and to which account ("" for none).
	SetEventOutcome(ctx context.Context, eventID string, o Outcome, accountID string) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// PlanCache forgets what it cached of an account's keys, so that a plan change is seen on the next
// request (keys.Service.ForgetAccount).
type PlanCache interface {
	ForgetAccount(accountID string)
}

// Service is the billing use cases.
type Service struct {
	store Store
	proc  Processor
	cache PlanCache
	log   *slog.Logger
}

// New returns a Service. A nil proc is billing not configured: checkout and the webhook answer
// ErrNotConfigured, the status report still works.
func New(store Store, proc Processor, cache PlanCache, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: store, proc: proc, cache: cache, log: log}
}

// Session is a checkout opened for an account.
type Session struct {
	Checkout
	AccountID string
	KeyID     string
	KeyPrefix string
	Email     string
	Plan      string
}

// CheckoutForKey opens a checkout that upgrades the account of key, a trial key calling with itself
// as bearer (POST /v1/billing/checkout-session).
func (s *Service) CheckoutForKey(ctx context.Context, key keys.Key) (Session, error) {
	if s.proc == nil {
		return Session{}, ErrNotConfigured
	}
	if key.Plan != PlanTrial {
		return Session{}, fmt.Errorf("%w: this key's account is on the %s plan", ErrKeyNotTrial, key.Plan)
	}
	acct, err := s.store.BillingAccount(ctx, key.AccountID)
	if err != nil {
		return Session{}, err
	}
	if acct.Plan != PlanTrial {
		// The key was cached before an upgrade that another replica applied.
		return Session{}, fmt.Errorf("%w: this key's account is on the %s plan", ErrKeyNotTrial, acct.Plan)
	}
	return s.open(ctx, acct, key)
}

// Selector names the account of an admin checkout: exactly one of Email and KeyID.
type Selector struct {
	Email string
	KeyID string
}

// CheckoutForAccount opens a checkout for the account an operator names (POST
// /v1/billing/checkout/session): by e-mail, or by the id of one of its keys.
func (s *Service) CheckoutForAccount(ctx context.Context, sel Selector) (Session, error) {
	if s.proc == nil {
		return Session{}, ErrNotConfigured
	}
	email, keyID := normalizeEmail(sel.Email), strings.TrimSpace(sel.KeyID)
	var (
		acct Account
		key  keys.Key
		err  error
	)
	switch {
	case (email == "") == (keyID == ""):
		return Session{}, fmt.Errorf("%w: name the account by exactly one of email and key_id", fault.ErrInvalid)
	case keyID != "":
		if uuid.Validate(keyID) != nil {
			return Session{}, fmt.Errorf("%w: key_id is not a key id", fault.ErrInvalid)
		}
		if key, err = s.store.KeyByID(ctx, keyID); errors.Is(err, fault.ErrNotFound) {
			return Session{}, fmt.Errorf("%w: no key has this key_id", fault.ErrNotFound)
		} else if err != nil {
			return Session{}, err
		}
		acct, err = s.store.BillingAccount(ctx, key.AccountID)
	default:
		if err := checkEmail(email); err != nil {
			return Session{}, err
		}
		acct, err = s.store.BillingAccountByEmail(ctx, email)
		if errors.Is(err, fault.ErrNotFound) {
			return Session{}, fmt.Errorf("%w: no account has this e-mail (issue it a key first)", fault.ErrNotFound)
		}
	}
	if err != nil {
		return Session{}, err
	}
	if acct.Plan != PlanTrial {
		return Session{}, fmt.Errorf("%w: it is on the %s plan", ErrNotTrial, acct.Plan)
	}
	return s.open(ctx, acct, key)
}

func (s *Service) open(ctx context.Context, acct Account, key keys.Key) (Session, error) {
	email := acct.Email
	if email == "" {
		email = acct.CustomerEmail
	}
	co, err := s.proc.CreateCheckout(ctx, CheckoutRequest{AccountID: acct.ID, KeyID: key.ID, Email: email, CustomerID: acct.CustomerID})
	if err != nil {
		return Session{}, err
	}
	s.log.InfoContext(ctx, "billing: checkout opened", "account_id", acct.ID, "checkout_session_id", co.ID)
	return Session{Checkout: co, AccountID: acct.ID, KeyID: key.ID, KeyPrefix: key.Prefix, Email: email, Plan: acct.Plan}, nil
}

// Status is an account's billing status for support (GET /v1/billing/accounts/{email}/status).
type Status struct {
	Account
	Keys []keys.Key
}

// KeyStatus sums up the account's keys: "active" when one of them authenticates, "revoked" when
// all are revoked, "none" when it has none.
func (st Status) KeyStatus() string {
	if len(st.Keys) == 0 {
		return "none"
	}
	for _, k := range st.Keys {
		if k.RevokedAt == nil {
			return "active"
		}
	}
	return "revoked"
}

// SubscriptionState is the subscription's status as the processor names it (active, past_due,
// canceled, ...), or "none" before any checkout completed.
func (st Status) SubscriptionState() string {
	if st.SubscriptionStatus == "" {
		return "none"
	}
	return st.SubscriptionStatus
}

// AccountStatus reports the billing status of the account of email.
func (s *Service) AccountStatus(ctx context.Context, email string) (Status, error) {
	email = normalizeEmail(email)
	if err := checkEmail(email); err != nil {
		return Status{}, err
	}
	acct, err := s.store.BillingAccountByEmail(ctx, email)
	if errors.Is(err, fault.ErrNotFound) {
		return Status{}, fmt.Errorf("%w: no account has this e-mail", fault.ErrNotFound)
	}
	if err != nil {
		return Status{}, err
	}
	ks, err := s.store.AccountKeys(ctx, acct.ID)
	if err != nil {
		return Status{}, err
	}
	return Status{Account: acct, Keys: ks}, nil
}

// HandleWebhook verifies and applies one webhook delivery. Event types the service does not act on
// are acknowledged (OutcomeIgnored) without being stored: acknowledging them is what stops the
// processor from retrying them. When the account's plan changed, this replica's key cache forgets
// the account at once; other replicas see the new plan within keys.DefaultCacheTTL.
func (s *Service) HandleWebhook(ctx context.Context, payload []byte, signatureHeader string) (Applied, error) {
	if s.proc == nil {
		return Applied{}, ErrNotConfigured
	}
	e, err := s.proc.ParseEvent(payload, signatureHeader)
	if err != nil {
		return Applied{}, err
	}
	if !handled(e.Type) {
		return Applied{EventID: e.ID, Outcome: OutcomeIgnored}, nil
	}
	a, err := s.applyOnce(ctx, e)
	if err != nil {
		return Applied{}, fmt.Errorf("billing: apply event %s (%s): %w", e.ID, e.Type, err)
	}
	if a.PlanBefore != a.PlanAfter {
		s.cache.ForgetAccount(a.AccountID)
		s.log.InfoContext(ctx, "billing: plan changed", "account_id", a.AccountID, "event_id", e.ID,
			"event_type", e.Type, "from", a.PlanBefore, "to", a.PlanAfter)
	} else {
		s.log.InfoContext(ctx, "billing: event applied", "account_id", a.AccountID, "event_id", e.ID,
			"event_type", e.Type, "outcome", a.Outcome)
	}
	return a, nil
}

// applyOnce applies e in one transaction: it records the event id, locks the event's account,
// applies the rules (Apply) and writes back what they changed. A known event id applies nothing and
// reports OutcomeDuplicate; an event whose account is unknown is recorded with OutcomeUnknownAccount.
func (s *Service) applyOnce(ctx context.Context, e Event) (Applied, error) {
	tx, err := s.store.BeginEvent(ctx)
	if err != nil {
		return Applied{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	a, err := applyIn(ctx, tx, e)
	if err != nil {
		return Applied{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Applied{}, err
	}
	return a, nil
}

func applyIn(ctx context.Context, tx EventTx, e Event) (Applied, error) {
	out := Applied{EventID: e.ID}
	fresh, err := tx.RecordEvent(ctx, e)
	if err != nil {
		return out, err
	}
	if !fresh {
		out.Outcome = OutcomeDuplicate
		return out, nil
	}
	acct, err := tx.LockEventAccount(ctx, e)
	if errors.Is(err, fault.ErrNotFound) {
		out.Outcome = OutcomeUnknownAccount
		return out, tx.SetEventOutcome(ctx, e.ID, out.Outcome, "")
	}
	if err != nil {
		return out, err
	}
	before := acct
	out.AccountID, out.PlanBefore = acct.ID, acct.Plan
	out.Outcome = Apply(&acct, e)
	out.PlanAfter = acct.Plan
	if acct.Plan != before.Plan {
		if err := tx.SetPlan(ctx, acct.ID, acct.Plan); err != nil {
			return out, err
		}
	}
	if acct.Email != before.Email && before.Email == "" {
		// The checkout's e-mail names an anonymous trial account.
		if err := tx.NameAccount(ctx, acct.ID, acct.Email); err != nil {
			return out, err
		}
	}
	if err := tx.SaveBilling(ctx, acct.ID, acct.Billing); err != nil {
		return out, err
	}
	return out, tx.SetEventOutcome(ctx, e.ID, out.Outcome, acct.ID)
}

func normalizeEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

func checkEmail(e string) error {
	if e == "" || !strings.Contains(e, "@") || len(e) > 254 {
		return fmt.Errorf("%w: email is not an e-mail address", fault.ErrInvalid)
	}
	return nil
}
