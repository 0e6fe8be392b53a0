package api

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// Telemetry route ids of the scoring routes (Document 2 "Endpoints").
const (
	RouteUnified       = "unified_score"
	RouteBatch         = "batch_score"
	RouteDenial        = "denial_score"
	RoutePriorAuth     = "prior_auth_predict"
	RouteReimbursement = "reimbursement_estimate"
)

// MaxBatchItems bounds a batch.
const MaxBatchItems = 100

// Scoring implements scoring.v1.ScoringService.
type Scoring struct {
	scoringv1.UnimplementedScoringServiceServer
	engine     *decision.Engine
	models     *model.Set
	limiter    Limiter
	log        *slog.Logger
	upgradeURL string
	now        func() time.Time
	metrics    decisionMetrics
}

// Limiter admits billable requests against a key's plan and meters the ones that succeed;
// *meter.Meter is the service's.
type Limiter interface {
	Admit(ctx context.Context, keyID string, plan meter.Plan, n int) (meter.Ticket, error)
}

// NewScoring returns the service. upgradeURL is where a trial key that ran out of calls upgrades.
func NewScoring(engine *decision.Engine, models *model.Set, limiter Limiter, log *slog.Logger, upgradeURL string) *Scoring {
	return &Scoring{engine: engine, models: models, limiter: limiter, log: log, upgradeURL: upgradeURL, now: time.Now, metrics: newDecisionMetrics()}
}

var currentVersion = map[claim.Workflow]string{
	claim.Denial:        model.DenialVersion,
	claim.PriorAuth:     model.PriorAuthVersion,
	claim.Reimbursement: model.ReimbursementVersion,
}

var legacyPath = map[claim.Workflow]string{
	claim.Denial:        "/v1/claims/denial/score",
	claim.PriorAuth:     "/v1/claims/prior-auth/predict",
	claim.Reimbursement: "/v1/claims/reimbursement/estimate",
}

// endpointOf is the feedback endpoint name of a workflow.
var endpointOf = map[claim.Workflow]string{
	claim.Denial:        "denial",
	claim.PriorAuth:     "prior_auth",
	claim.Reimbursement: "reimbursement",
}

// ListWorkflows is GET /v1/workflows.
func (s *Scoring) ListWorkflows(context.Context, *scoringv1.ListWorkflowsRequest) (*scoringv1.ListWorkflowsResponse, error) {
	out := &scoringv1.ListWorkflowsResponse{}
	for _, sp := range claim.Specs() {
		out.Workflows = append(out.Workflows, &scoringv1.WorkflowSummary{
			Workflow: string(sp.Workflow), Title: sp.Title, Description: sp.Description,
			ModelVersion: currentVersion[sp.Workflow],
			SchemaUrl:    "/v1/workflows/" + string(sp.Workflow) + "/schema",
			ValidateUrl:  "/v1/workflows/" + string(sp.Workflow) + "/validate",
			LegacyPath:   legacyPath[sp.Workflow],
		})
	}
	return out, nil
}

func lookupWorkflow(id string) (*claim.Spec, error) {
	w, ok := claim.ParseWorkflow(id)
	if !ok {
		return nil, apierror.Newf(http.StatusNotFound, "Unknown workflow %q", id)
	}
	return claim.Lookup(w), nil
}

// GetWorkflowSchema is GET /v1/workflows/{workflow}/schema.
func (s *Scoring) GetWorkflowSchema(_ context.Context, req *scoringv1.GetWorkflowSchemaRequest) (*scoringv1.GetWorkflowSchemaResponse, error) {
	sp, err := lookupWorkflow(req.GetWorkflow())
	if err != nil {
		return nil, err
	}
	schema := &structpb.Struct{}
	if err := schema.UnmarshalJSON(sp.Schema); err != nil {
		return nil, err
	}
	example, err := structpb.NewStruct(sp.Example)
	if err != nil {
		return nil, err
	}
	return &scoringv1.GetWorkflowSchemaResponse{Schema: &scoringv1.WorkflowSchema{
		Workflow: string(sp.Workflow), RequiredFields: sp.Required, OptionalFields: sp.Optional,
		RequestSchema: schema, Example: example, ModelVersion: currentVersion[sp.Workflow],
	}}, nil
}

// ValidateWorkflow is POST /v1/workflows/{workflow}/validate. It is not billable.
func (s *Scoring) ValidateWorkflow(_ context.Context, req *scoringv1.ValidateWorkflowRequest) (*scoringv1.ValidateWorkflowResponse, error) {
	sp, err := lookupWorkflow(req.GetWorkflow())
	if err != nil {
		return nil, err
	}
	_, normalised, errs := claim.Validate(sp.Workflow, req.GetPayload().AsMap())
	if len(errs) > 0 {
		// Document 2 answers with the normalized payload and the errors: the fields that passed,
		// normalised, so that a caller fixing a claim sees how the rest will be read.
		e := validationError(errs)
		e.Body["valid"] = false
		e.Body["workflow"] = string(sp.Workflow)
		e.Body["normalized_payload"] = normalised
		e.Body["billable"] = false
		return nil, e
	}
	np, err := structpb.NewStruct(normalised)
	if err != nil {
		return nil, err
	}
	return &scoringv1.ValidateWorkflowResponse{Workflow: string(sp.Workflow), Valid: true, NormalizedPayload: np, Errors: []*scoringv1.FieldError{}}, nil
}

// Score is POST /v1/score.
func (s *Scoring) Score(ctx context.Context, req *scoringv1.ScoreRequest) (*scoringv1.ScoreResponse, error) {
	res, err := s.scoreOne(ctx, RouteUnified, req.GetWorkflow(), req.GetPayload(), options(req.GetOptions()))
	return &scoringv1.ScoreResponse{Result: res}, err
}

// ScoreDenial is the legacy denial route.
func (s *Scoring) ScoreDenial(ctx context.Context, req *scoringv1.ScoreDenialRequest) (*scoringv1.ScoreDenialResponse, error) {
	res, err := s.scoreOne(ctx, RouteDenial, string(claim.Denial), req.GetPayload(), legacyOptions(req))
	return &scoringv1.ScoreDenialResponse{Result: res}, err
}

// PredictPriorAuth is the legacy prior-authorization route.
func (s *Scoring) PredictPriorAuth(ctx context.Context, req *scoringv1.PredictPriorAuthRequest) (*scoringv1.PredictPriorAuthResponse, error) {
	res, err := s.scoreOne(ctx, RoutePriorAuth, string(claim.PriorAuth), req.GetPayload(), legacyOptions(req))
	return &scoringv1.PredictPriorAuthResponse{Result: res}, err
}

// EstimateReimbursement is the legacy reimbursement route.
func (s *Scoring) EstimateReimbursement(ctx context.Context, req *scoringv1.EstimateReimbursementRequest) (*scoringv1.EstimateReimbursementResponse, error) {
	res, err := s.scoreOne(ctx, RouteReimbursement, string(claim.Reimbursement), req.GetPayload(), legacyOptions(req))
	return &scoringv1.EstimateReimbursementResponse{Result: res}, err
}

func options(o *scoringv1.ScoreOptions) decision.Options {
	return decision.Options{
		ModelVersion: o.GetModelVersion(), AllowFallback: o == nil || o.AllowFallback == nil || o.GetAllowFallback(),
		OperatingPoint: o.GetOperatingPoint(), DistributionProfile: o.GetDistributionProfile(),
	}
}

// legacyRequest is what the three legacy request messages share: the options as query parameters.
type legacyRequest interface {
	proto.Message
	GetModelVersion() string
	GetAllowFallback() bool
	GetOperatingPoint() string
	GetDistributionProfile() string
}

func legacyOptions(r legacyRequest) decision.Options {
	// allow_fallback defaults to true when the query does not name it, which only field presence tells.
	fd := r.ProtoReflect().Descriptor().Fields().ByName("allow_fallback")
	return decision.Options{
		ModelVersion: r.GetModelVersion(), AllowFallback: !r.ProtoReflect().Has(fd) || r.GetAllowFallback(),
		OperatingPoint: r.GetOperatingPoint(), DistributionProfile: r.GetDistributionProfile(),
	}
}

// newRequestID is the x-request-id of a scoring response and the key of its feedback: a UUIDv7, so
// that request records are inserted in roughly index order.
func newRequestID() string { return uuid.Must(uuid.NewV7()).String() }

// scoringMethods are the calls whose every answer carries an x-request-id (Document 2 "Score
// response"): refusals by authentication, limits and validation too, so that a client can quote the
// id of any answer it got.
var scoringMethods = map[string]bool{
	scoringv1.ScoringService_Score_FullMethodName:                 true,
	scoringv1.ScoringService_ScoreBatch_FullMethodName:            true,
	scoringv1.ScoringService_ScoreDenial_FullMethodName:           true,
	scoringv1.ScoringService_PredictPriorAuth_FullMethodName:      true,
	scoringv1.ScoringService_EstimateReimbursement_FullMethodName: true,
}

type requestIDKey struct{}

// RequestIDs gives each scoring call its x-request-id before the interceptors after it can refuse the
// call: it goes first, before Authenticate. It is the only source of a call's id (requestIDOf); a
// server without it would answer without ids and store no request records.
func RequestIDs() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !scoringMethods[info.FullMethod] {
			return handler(ctx, req)
		}
		id := newRequestID()
		_ = grpc.SetHeader(ctx, metadata.Pairs("x-request-id", id))
		return handler(context.WithValue(ctx, requestIDKey{}, id), req)
	}
}

// requestIDOf is the call's x-request-id, which RequestIDs gave it.
func requestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ErrorHeaders is the gateway's gateway.WithErrorHeaders hook: a scoring call that failed before
// RequestIDs ran (a body the gateway could not decode) still answers with an x-request-id. Nothing is
// recorded under it, since nothing was scored.
func ErrorHeaders(ctx context.Context, h http.Header) {
	if m, ok := runtime.RPCMethod(ctx); ok && scoringMethods[m] && h.Get("X-Request-Id") == "" {
		h.Set("X-Request-Id", newRequestID())
	}
}

// admit applies the key's plan limits to a request that will bill up to n calls.
func (s *Scoring) admit(ctx context.Context, n int) (meter.Ticket, error) {
	key := callerFrom(ctx)
	plan, ok := meter.PlanFor(key.Plan)
	if !ok {
		plan, _ = meter.PlanFor("trial")
	}
	t, err := s.limiter.Admit(ctx, key.ID, plan, n)
	if err != nil {
		var limit *meter.LimitError
		if errors.As(err, &limit) && limit.RetryAfter > 0 {
			_ = grpc.SetHeader(ctx, metadata.Pairs("retry-after", strconv.Itoa(int(math.Ceil(limit.RetryAfter.Seconds())))))
		}
		return t, toAPI(err, s.upgradeURL)
	}
	return t, nil
}

func (s *Scoring) scoreOne(ctx context.Context, route, workflow string, payload *structpb.Struct, o decision.Options) (*scoringv1.ScoreResult, error) {
	requestID := requestIDOf(ctx)
	ticket, err := s.admit(ctx, 1)
	if err != nil {
		return nil, err
	}
	d, resp, err := s.decide(workflow, payload, o)
	if err != nil {
		ticket.Release()
		return nil, toAPI(err, s.upgradeURL)
	}
	key := callerFrom(ctx)
	ticket.Commit(1, s.record(key.ID, key.AccountID, requestID, route, d))
	s.logDecision(ctx, requestID, route, key.Prefix, d)
	return resp, nil
}

func (s *Scoring) record(keyID, accountID, requestID, route string, d decision.Decision) meter.RequestRecord {
	return meter.RequestRecord{
		RequestID: requestID, KeyID: keyID, AccountID: accountID, Endpoint: endpointOf[d.Workflow],
		RouteID: route, ModelVersion: d.ModelVersion, ScoredAt: s.now().UTC(),
	}
}

// structPayload is a claim.Payload over the gateway's structpb payload, read field by field: copying
// it into a map with AsMap was 3 % of the service's CPU under the scoring load.
type structPayload struct{ s *structpb.Struct }

func (p structPayload) Field(name string) (any, bool) {
	v, ok := p.s.GetFields()[name]
	if !ok {
		return nil, false
	}
	return v.AsInterface(), true
}

func (p structPayload) Len() int { return len(p.s.GetFields()) }

func (p structPayload) Names() iter.Seq[string] { return maps.Keys(p.s.GetFields()) }

// decide validates and scores one payload.
func (s *Scoring) decide(workflow string, payload *structpb.Struct, o decision.Options) (decision.Decision, *scoringv1.ScoreResult, error) {
	// Check reports an unknown workflow like any other field error (rule "workflow").
	w := claim.Workflow(workflow)
	c, errs := claim.Check(w, structPayload{payload})
	if len(errs) > 0 {
		return decision.Decision{}, nil, errs
	}
	d, err := s.engine.Decide(w, &c, o)
	if err != nil {
		return decision.Decision{}, nil, err
	}
	return d, render(d, s.now()), nil
}

// ScoreBatch is POST /v1/score/batch: each item is scored on its own and bills one call when it
// succeeds; the batch is admitted once (one request against the rate limit) for all its items.
func (s *Scoring) ScoreBatch(ctx context.Context, req *scoringv1.ScoreBatchRequest) (*scoringv1.ScoreBatchResponse, error) {
	requestID := requestIDOf(ctx)
	items := req.GetItems()
	if len(items) == 0 || len(items) > MaxBatchItems {
		return nil, apierror.Newf(http.StatusUnprocessableEntity, "items must hold between 1 and %d score requests (got %d)", MaxBatchItems, len(items))
	}
	ticket, err := s.admit(ctx, len(items))
	if err != nil {
		return nil, err
	}
	key := callerFrom(ctx)
	out := &scoringv1.ScoreBatchResponse{Results: make([]*scoringv1.BatchResult, len(items))}
	var records []meter.RequestRecord
	for i, it := range items {
		res := &scoringv1.BatchResult{Index: int32(i), Id: it.GetId()}
		d, resp, err := s.decide(it.GetWorkflow(), it.GetPayload(), options(it.GetOptions()))
		if err != nil {
			res.Status, res.Error, res.Errors = itemError(err, s.upgradeURL)
		} else {
			res.Status, res.Result = http.StatusOK, resp
			res.RequestId = requestID + "." + strconv.Itoa(i)
			records = append(records, s.record(key.ID, key.AccountID, res.RequestId, RouteBatch, d))
			s.logDecision(ctx, res.RequestId, RouteBatch, key.Prefix, d)
		}
		out.Results[i] = res
	}
	ticket.Commit(len(records), records...)
	out.Summary = &scoringv1.BatchSummary{
		Total: int32(len(items)), Succeeded: int32(len(records)), Failed: int32(len(items) - len(records)),
		BillableCalls: int32(len(records)),
	}
	return out, nil
}

// itemError renders an item's failure as the status and detail it would have had alone.
func itemError(err error, upgradeURL string) (int32, string, []*scoringv1.FieldError) {
	var fieldErrs claim.Errors
	if errors.As(err, &fieldErrs) {
		out := make([]*scoringv1.FieldError, len(fieldErrs))
		for i, e := range fieldErrs {
			out[i] = &scoringv1.FieldError{Field: e.Field, Rule: e.Rule, Message: e.Message}
		}
		return http.StatusUnprocessableEntity, fieldErrs.Error(), out
	}
	e, ok := apierror.As(toAPI(err, upgradeURL))
	if !ok {
		return http.StatusInternalServerError, "Internal Server Error", nil
	}
	detail, _ := e.Body["detail"].(string)
	return int32(e.Status), detail, nil
}

// render builds the score response: exactly the fields of Document 2 "Score response".
func render(d decision.Decision, now time.Time) *scoringv1.ScoreResult {
	resp := &scoringv1.ScoreResult{
		Workflow: string(d.Workflow), Score: d.Score, RiskLevel: d.RiskLevel, Confidence: d.Confidence,
		ModelVersion: d.ModelVersion, Explanation: &scoringv1.Explanation{TopFactors: make([]*scoringv1.Factor, len(d.Factors))},
		Details:  &scoringv1.Details{Workflow: string(d.Workflow)},
		ScoredAt: timestamppb.New(now.UTC().Truncate(time.Millisecond)),
	}
	for i, f := range d.Factors {
		resp.Explanation.TopFactors[i] = &scoringv1.Factor{Feature: f.Name, Contribution: f.Contribution, Direction: f.Direction}
	}
	drift := d.Drift
	if drift == nil {
		drift = []string{}
	}
	switch {
	case d.Denial != nil:
		x := d.Denial
		resp.Details.Scoped = &scoringv1.Details_Denial{Denial: &scoringv1.DenialDetails{
			DenialProbability: x.Probability, OperatingPoint: x.OperatingPoint, DistributionProfile: string(x.Profile),
			RoutingSource: x.RoutingSource, RiskTier: x.RiskTier, CalibrationMethod: x.CalibrationMethod,
			CalibrationVersion: x.CalibrationVersion, Threshold: x.Threshold, ThresholdSource: x.ThresholdSource,
			PredictedDenial: x.PredictedDenial, DriftFlags: drift,
		}}
	case d.PriorAuth != nil:
		x := d.PriorAuth
		pa := &scoringv1.PriorAuthDetails{
			PriorAuthProbability: x.Probability, CalibrationMethod: x.CalibrationMethod, CalibrationVersion: x.CalibrationVersion,
			PayerSupport:  &scoringv1.PayerSupport{SupportLevel: x.SupportLevel, Note: supportNote[x.SupportLevel]},
			PolicySignals: []*scoringv1.PolicySignal{}, DriftFlags: drift,
		}
		for _, m := range x.Signals {
			pa.PolicySignals = append(pa.PolicySignals, &scoringv1.PolicySignal{
				ChangeEventId: m.ChangeEventID, ChangeType: m.ChangeType, Organization: m.Organization, Summary: m.Summary,
				MatchedCodes: m.MatchedCodes, PolicyUrl: m.PolicyURL, PublishedAt: timestamppb.New(m.PublishedAt),
			})
		}
		resp.Details.Scoped = &scoringv1.Details_PriorAuth{PriorAuth: pa}
	case d.Reimbursement != nil:
		x := d.Reimbursement
		resp.Details.Scoped = &scoringv1.Details_Reimbursement{Reimbursement: &scoringv1.ReimbursementDetails{
			ExpectedAllowedAmount: x.ExpectedAllowed, BilledAmount: x.Billed, ReimbursementRatio: x.Ratio, Units: x.Units, DriftFlags: drift,
		}}
	}
	return resp
}

var supportNote = map[string]string{
	"high":     "The model has ample history for this payer.",
	"moderate": "The model has some history for this payer; confidence is reduced.",
	"low":      "The score is valid but the model has little history for this payer: keep manual payer policy verification in the loop.",
}

// ListModels is GET /v1/models: the model cards (validation evidence) of the served versions.
func (s *Scoring) ListModels(context.Context, *scoringv1.ListModelsRequest) (*scoringv1.ListModelsResponse, error) {
	out := &scoringv1.ListModelsResponse{}
	for _, c := range s.models.Cards() {
		out.Models = append(out.Models, cardToProto(c))
	}
	return out, nil
}
