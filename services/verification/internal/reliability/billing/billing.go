// Package billing is agent reliability's billing: the workspace's plan with its limits and this
// month's usage, a hosted checkout that upgrades a free workspace to the team plan, and the
// processor's webhook events that move the workspace between plans in place
// (reliability_workspaces.plan, which the target and scan limits read). It also gathers what the
// workspace's dashboard page shows. The processor is behind Processor (stripe.go implements it with
// pkg/stripebilling).
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// Errors of the use cases.
var (
	// ErrNotConfigured is billing without processor settings: checkout and the webhook cannot work.
	ErrNotConfigured = errors.New("billing is not configured")
	// ErrAlreadySubscribed is a checkout for a workspace already on a paid plan.
	ErrAlreadySubscribed = errors.New("workspace already on a paid plan")
	// ErrProcessor is the payment processor failing or refusing a call; the cause is logged only.
	ErrProcessor = errors.New("payment processor unavailable")
)

// Errors of Processor.ParseEvent: a webhook the service cannot trust or read (400), which the
// processor delivers again.
var (
	ErrSignature    = errors.New("invalid webhook signature")
	ErrStale        = errors.New("webhook timestamp outside the tolerance")
	ErrInvalidEvent = errors.New("unreadable webhook event")
)

// Plans and billing statuses (reliability_workspaces.plan and billing_status).
const (
	PlanFree       = "free"
	PlanTeam       = "team"
	PlanEnterprise = "enterprise"

	StatusNone            = "none"
	StatusCheckoutPending = "checkout_pending"
	StatusActive          = "active"
	StatusPastDue         = "past_due"
	StatusCanceled        = "canceled"
)

// Workspace is a workspace's plan and billing state. A workspace without a row is free, status none.
type Workspace struct {
	OrganizationID uuid.UUID
	Plan           string
	Status         string
	CustomerID     string
	SubscriptionID string
	PeriodStart    *time.Time
	PeriodEnd      *time.Time
	// SubscriptionEventAt is the creation time of the newest subscription event applied.
	SubscriptionEventAt *time.Time
}

// Usage is what counts against a plan's limits in a period.
type Usage struct {
	// PeriodStart and PeriodEnd bound the calendar month (UTC) the scans are counted in.
	PeriodStart, PeriodEnd time.Time
	Targets, Scans         int
}

// Status is a workspace's billing status (GET /billing).
type Status struct {
	Workspace
	Limits reliability.Plan
	Usage  Usage
	// CheckoutAvailable: billing is configured and the workspace is not on a paid plan.
	CheckoutAvailable bool
}

// CheckoutRequest is what the processor needs to open a checkout of the team plan.
type CheckoutRequest struct {
	OrganizationID uuid.UUID
	// CustomerID, when the workspace paid before, reuses its customer.
	CustomerID string
}

// Checkout is an open hosted checkout.
type Checkout struct {
	ID        string
	URL       string
	Plan      string
	ExpiresAt time.Time
}

// Processor is the payment processor. CreateCheckout returns ErrProcessor when the processor fails;
// ParseEvent returns ErrSignature, ErrStale or ErrInvalidEvent for a webhook it cannot trust or read.
type Processor interface {
	CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error)
	ParseEvent(payload []byte, signatureHeader string) (Event, error)
}

// Store persists billing state and reads what the dashboard shows. It answers only rows of the
// organization it is given.
type Store interface {
	// Workspace reads a workspace's billing state; a workspace without a row is free, status none.
	Workspace(ctx context.Context, org uuid.UUID) (Workspace, error)
	// Usage counts the workspace's targets now and its runs created in [from, to).
	Usage(ctx context.Context, org uuid.UUID, from, to time.Time) (targets, scans int, err error)
	// MarkCheckoutPending records that a checkout was opened, creating the workspace's row, unless a
	// subscription is running (status active or past_due).
	MarkCheckoutPending(ctx context.Context, org uuid.UUID) error
	// BeginEvent starts the transaction in which one webhook event is applied.
	BeginEvent(ctx context.Context) (EventTx, error)
	// Dashboard reads the workspace's repositories, targets, latest runs, baselines and held runs.
	Dashboard(ctx context.Context, org uuid.UUID, limits DashboardLimits) (Dashboard, error)
}

// EventTx is the transaction of one webhook event: what its steps write commits together, so a
// delivery that fails half-way is retried whole by the processor, and one that succeeded is a
// duplicate on every redelivery. Rollback after Commit changes nothing.
type EventTx interface {
	// Seen takes the event id's lock until the transaction ends (a concurrent delivery of the same
	// event waits here) and reports whether the event was applied before.
	Seen(ctx context.Context, eventID string) (bool, error)
	// LockWorkspace finds the event's workspace and locks it until the transaction ends: by
	// e.OrganizationID (creating the row of an existing organization), else by e.SubscriptionID,
	// else by e.CustomerID; found is false when none matches.
	LockWorkspace(ctx context.Context, e Event) (w Workspace, found bool, err error)
	// SaveWorkspace writes a workspace's plan and billing state.
	SaveWorkspace(ctx context.Context, w Workspace) error
	// RecordEvent stores the event with what applying it did (organization uuid.Nil for none).
	RecordEvent(ctx context.Context, e Event, o Outcome, org uuid.UUID) error
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// Service is the billing use cases.
type Service struct {
	store Store
	proc  Processor
	log   *slog.Logger
	now   func() time.Time
}

// New returns a Service. A nil proc is billing not configured: checkout and the webhook answer
// ErrNotConfigured; the status and the dashboard still work.
func New(store Store, proc Processor, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: store, proc: proc, log: log, now: time.Now}
}

// Status reports the workspace's plan, limits and usage this month.
func (s *Service) Status(ctx context.Context, org uuid.UUID) (Status, error) {
	w, err := s.store.Workspace(ctx, org)
	if err != nil {
		return Status{}, err
	}
	from, to := reliability.Month(s.now())
	targets, scans, err := s.store.Usage(ctx, org, from, to)
	if err != nil {
		return Status{}, err
	}
	return Status{
		Workspace: w, Limits: reliability.PlanOf(w.Plan),
		Usage:             Usage{PeriodStart: from, PeriodEnd: to, Targets: targets, Scans: scans},
		CheckoutAvailable: s.proc != nil && !paid(w),
	}, nil
}

// paid reports whether a workspace is on a paid plan it should not buy again: enterprise, or team
// with a running subscription.
func paid(w Workspace) bool {
	return w.Plan == PlanEnterprise || (w.Plan == PlanTeam && (w.Status == StatusActive || w.Status == StatusPastDue))
}

// Checkout opens a hosted checkout of the team plan for the workspace (POST /billing/checkout).
func (s *Service) Checkout(ctx context.Context, org uuid.UUID) (Checkout, error) {
	if s.proc == nil {
		return Checkout{}, ErrNotConfigured
	}
	w, err := s.store.Workspace(ctx, org)
	if err != nil {
		return Checkout{}, err
	}
	if paid(w) {
		return Checkout{}, fmt.Errorf("%w: the workspace is on the %s plan", ErrAlreadySubscribed, w.Plan)
	}
	co, err := s.proc.CreateCheckout(ctx, CheckoutRequest{OrganizationID: org, CustomerID: w.CustomerID})
	if err != nil {
		return Checkout{}, err
	}
	if err := s.store.MarkCheckoutPending(ctx, org); err != nil {
		return Checkout{}, err
	}
	s.log.InfoContext(ctx, "reliability billing: checkout opened", "organization_id", org, "checkout_session_id", co.ID)
	return co, nil
}

// HandleWebhook verifies and applies one webhook delivery. Event types the service does not act on
// are acknowledged (OutcomeIgnored) without being stored: acknowledging them stops the processor's
// retries.
func (s *Service) HandleWebhook(ctx context.Context, payload []byte, signatureHeader string) (Applied, error) {
	if s.proc == nil {
		return Applied{}, ErrNotConfigured
	}
	e, err := s.proc.ParseEvent(payload, signatureHeader)
	if err != nil {
		return Applied{}, err
	}
	if !Handled(e.Type) {
		return Applied{EventID: e.ID, Outcome: OutcomeIgnored}, nil
	}
	a, err := s.applyOnce(ctx, e)
	if err != nil {
		return Applied{}, fmt.Errorf("reliability billing: apply event %s (%s): %w", e.ID, e.Type, err)
	}
	s.log.InfoContext(ctx, "reliability billing: event applied", "organization_id", a.OrganizationID, "event_id", e.ID,
		"event_type", e.Type, "outcome", a.Outcome, "from", a.PlanBefore, "to", a.PlanAfter)
	return a, nil
}

func (s *Service) applyOnce(ctx context.Context, e Event) (Applied, error) {
	tx, err := s.store.BeginEvent(ctx)
	if err != nil {
		return Applied{}, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	out := Applied{EventID: e.ID}
	seen, err := tx.Seen(ctx, e.ID)
	if err != nil {
		return out, err
	}
	if seen {
		out.Outcome = OutcomeDuplicate
		return out, nil
	}
	w, found, err := tx.LockWorkspace(ctx, e)
	if err != nil {
		return out, err
	}
	if !found {
		out.Outcome = OutcomeUnknownWorkspace
		if err := tx.RecordEvent(ctx, e, out.Outcome, uuid.Nil); err != nil {
			return out, err
		}
		return out, tx.Commit(ctx)
	}
	out.OrganizationID, out.PlanBefore = w.OrganizationID, w.Plan
	out.Outcome = Apply(&w, e)
	out.PlanAfter = w.Plan
	if err := tx.SaveWorkspace(ctx, w); err != nil {
		return out, err
	}
	if err := tx.RecordEvent(ctx, e, out.Outcome, w.OrganizationID); err != nil {
		return out, err
	}
	return out, tx.Commit(ctx)
}
