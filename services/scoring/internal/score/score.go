// Package score is the scoring use case of POST /v1/score and of every path that scores a claim (the
// batch, the three legacy routes, the MCP tool through the in-process connection): admit the calls
// against the key's plan, validate and decide each claim, commit the billed calls with their request
// records, and log each decision.
//
// Its routes are the scoring area's (scoring.proto, api/scoring.go); the package is score because
// scoring names the whole service, and a package of that name would claim it for one use case.
package score

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Telemetry route ids of the scoring routes (README "Telemetry route ids"): the route of a request
// record and of the scoring.decisions metric.
const (
	RouteUnified       = "unified_score"
	RouteBatch         = "batch_score"
	RouteDenial        = "denial_score"
	RoutePriorAuth     = "prior_auth_predict"
	RouteReimbursement = "reimbursement_estimate"
)

// MaxBatchItems bounds a batch.
const MaxBatchItems = 100

// Limiter admits billable requests against a key's plan and meters the ones that succeed;
// *meter.Meter is the service's.
type Limiter interface {
	Admit(ctx context.Context, keyID string, plan meter.Plan, n int) (meter.Ticket, error)
}

// Service scores claims. It is safe for concurrent use.
type Service struct {
	engine  *decision.Engine
	limiter Limiter
	log     *slog.Logger
	now     func() time.Time
	metrics decisionMetrics
}

// New returns the use case.
func New(engine *decision.Engine, limiter Limiter, log *slog.Logger) *Service {
	return &Service{engine: engine, limiter: limiter, log: log, now: time.Now, metrics: newDecisionMetrics()}
}

// Claim is one claim to score: the workflow named by the caller, its payload and the options.
type Claim struct {
	Workflow string
	Payload  claim.Payload
	Options  decision.Options
}

// Scored is a decision and when it was made.
type Scored struct {
	decision.Decision
	At time.Time
}

// CurrentVersion is the model version of w that answers a call that pins none.
func (s *Service) CurrentVersion(w claim.Workflow) string { return s.engine.Current(w) }

// One scores one claim for the caller on route (a telemetry route id) under the call's requestID,
// which keys its request record. A refusal by the limiter is a *meter.LimitError; an invalid claim
// is claim.Errors.
func (s *Service) One(ctx context.Context, caller keys.Key, requestID, route string, c Claim) (Scored, error) {
	ticket, err := s.admit(ctx, caller, 1)
	if err != nil {
		return Scored{}, err
	}
	sc, err := s.decide(c)
	if err != nil {
		ticket.Release()
		return Scored{}, err
	}
	ticket.Commit(1, record(caller, requestID, route, sc))
	s.logDecision(ctx, requestID, route, caller.Prefix, sc.Decision)
	return sc, nil
}

// Item is the outcome of one claim of a batch: a decision under its own request id, or its error.
type Item struct {
	Scored
	RequestID string
	Err       error
}

// Batch scores each claim on its own. The batch is admitted once, one request against the rate limit
// for all its claims, and bills one call per claim that succeeds; the claim at index i is recorded
// under "<requestID>.<i>".
func (s *Service) Batch(ctx context.Context, caller keys.Key, requestID string, claims []Claim) ([]Item, error) {
	if len(claims) == 0 || len(claims) > MaxBatchItems {
		return nil, fmt.Errorf("%w: items must hold between 1 and %d score requests (got %d)", fault.ErrInvalid, MaxBatchItems, len(claims))
	}
	ticket, err := s.admit(ctx, caller, len(claims))
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(claims))
	var records []meter.RequestRecord
	for i, c := range claims {
		sc, err := s.decide(c)
		if err != nil {
			items[i].Err = err
			continue
		}
		id := requestID + "." + strconv.Itoa(i)
		items[i] = Item{Scored: sc, RequestID: id}
		records = append(records, record(caller, id, RouteBatch, sc))
		s.logDecision(ctx, id, RouteBatch, caller.Prefix, sc.Decision)
	}
	ticket.Commit(len(records), records...)
	return items, nil
}

// admit applies the key's plan limits to a request that will bill up to n calls. A key whose plan
// this replica does not know is held to the trial's limits.
func (s *Service) admit(ctx context.Context, caller keys.Key, n int) (meter.Ticket, error) {
	plan, ok := meter.PlanFor(caller.Plan)
	if !ok {
		plan, _ = meter.PlanFor("trial")
	}
	return s.limiter.Admit(ctx, caller.ID, plan, n)
}

// decide validates and scores one claim.
func (s *Service) decide(c Claim) (Scored, error) {
	// Check reports an unknown workflow like any other field error (rule "workflow").
	w := claim.Workflow(c.Workflow)
	checked, errs := claim.Check(w, c.Payload)
	if len(errs) > 0 {
		return Scored{}, errs
	}
	d, err := s.engine.Decide(w, &checked, c.Options)
	if err != nil {
		return Scored{}, err
	}
	return Scored{Decision: d, At: s.now().UTC()}, nil
}

// endpointOf is the feedback endpoint name of a workflow.
var endpointOf = map[claim.Workflow]string{
	claim.Denial:        "denial",
	claim.PriorAuth:     "prior_auth",
	claim.Reimbursement: "reimbursement",
}

func record(caller keys.Key, requestID, route string, sc Scored) meter.RequestRecord {
	return meter.RequestRecord{
		RequestID: requestID, KeyID: caller.ID, AccountID: caller.AccountID, Endpoint: endpointOf[sc.Workflow],
		RouteID: route, ModelVersion: sc.ModelVersion, ScoredAt: sc.At,
	}
}
