package api

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
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
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// Scoring implements scoring.v1.ScoringService: the workflow catalogue, validation, the model cards
// and the scoring routes, which all call the score use case.
type Scoring struct {
	scoringv1.UnimplementedScoringServiceServer
	score  *score.Service
	models *model.Set
}

// NewScoring returns the service.
func NewScoring(sc *score.Service, models *model.Set) *Scoring {
	return &Scoring{score: sc, models: models}
}

var legacyPath = map[claim.Workflow]string{
	claim.Denial:        "/v1/claims/denial/score",
	claim.PriorAuth:     "/v1/claims/prior-auth/predict",
	claim.Reimbursement: "/v1/claims/reimbursement/estimate",
}

// ListWorkflows is GET /v1/workflows.
func (s *Scoring) ListWorkflows(context.Context, *scoringv1.ListWorkflowsRequest) (*scoringv1.ListWorkflowsResponse, error) {
	out := &scoringv1.ListWorkflowsResponse{}
	for _, sp := range claim.Specs() {
		out.Workflows = append(out.Workflows, &scoringv1.WorkflowSummary{
			Workflow: string(sp.Workflow), Title: sp.Title, Description: sp.Description,
			ModelVersion: s.score.CurrentVersion(sp.Workflow),
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
		return nil, toAPI(context.Background(), fmt.Errorf("%w: Unknown workflow %q", fault.ErrNotFound, id))
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
		RequestSchema: schema, Example: example, ModelVersion: s.score.CurrentVersion(sp.Workflow),
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
		// The answer holds the normalized payload and the errors: the fields that passed,
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
	res, err := s.one(ctx, score.RouteUnified, req.GetWorkflow(), req.GetPayload(), options(req.GetOptions()))
	return &scoringv1.ScoreResponse{Result: res}, err
}

// ScoreDenial is the legacy denial route.
func (s *Scoring) ScoreDenial(ctx context.Context, req *scoringv1.ScoreDenialRequest) (*scoringv1.ScoreDenialResponse, error) {
	res, err := s.one(ctx, score.RouteDenial, string(claim.Denial), req.GetPayload(), legacyOptions(req))
	return &scoringv1.ScoreDenialResponse{Result: res}, err
}

// PredictPriorAuth is the legacy prior-authorization route.
func (s *Scoring) PredictPriorAuth(ctx context.Context, req *scoringv1.PredictPriorAuthRequest) (*scoringv1.PredictPriorAuthResponse, error) {
	res, err := s.one(ctx, score.RoutePriorAuth, string(claim.PriorAuth), req.GetPayload(), legacyOptions(req))
	return &scoringv1.PredictPriorAuthResponse{Result: res}, err
}

// EstimateReimbursement is the legacy reimbursement route.
func (s *Scoring) EstimateReimbursement(ctx context.Context, req *scoringv1.EstimateReimbursementRequest) (*scoringv1.EstimateReimbursementResponse, error) {
	res, err := s.one(ctx, score.RouteReimbursement, string(claim.Reimbursement), req.GetPayload(), legacyOptions(req))
	return &scoringv1.EstimateReimbursementResponse{Result: res}, err
}

// one scores one claim on route for the caller of ctx.
func (s *Scoring) one(ctx context.Context, route, workflow string, payload *structpb.Struct, o decision.Options) (*scoringv1.ScoreResult, error) {
	sc, err := s.score.One(ctx, callerFrom(ctx), requestIDOf(ctx), route, score.Claim{Workflow: workflow, Payload: structPayload{payload}, Options: o})
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return render(sc), nil
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

// scoringMethods are the calls whose every answer carries an x-request-id (README "Score
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

// ScoreBatch is POST /v1/score/batch: each item is scored on its own and bills one call when it
// succeeds; the batch is admitted once (one request against the rate limit) for all its items.
func (s *Scoring) ScoreBatch(ctx context.Context, req *scoringv1.ScoreBatchRequest) (*scoringv1.ScoreBatchResponse, error) {
	in := req.GetItems()
	claims := make([]score.Claim, len(in))
	for i, it := range in {
		claims[i] = score.Claim{Workflow: it.GetWorkflow(), Payload: structPayload{it.GetPayload()}, Options: options(it.GetOptions())}
	}
	items, err := s.score.Batch(ctx, callerFrom(ctx), requestIDOf(ctx), claims)
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.ScoreBatchResponse{Results: make([]*scoringv1.BatchResult, len(items))}
	succeeded := 0
	for i, it := range items {
		res := &scoringv1.BatchResult{Index: int32(i), Id: in[i].GetId()}
		if it.Err != nil {
			res.Status, res.Error, res.Errors = itemError(ctx, it.Err)
		} else {
			res.Status, res.Result, res.RequestId = http.StatusOK, render(it.Scored), it.RequestID
			succeeded++
		}
		out.Results[i] = res
	}
	out.Summary = &scoringv1.BatchSummary{
		Total: int32(len(items)), Succeeded: int32(succeeded), Failed: int32(len(items) - succeeded),
		BillableCalls: int32(succeeded),
	}
	return out, nil
}

// itemError renders an item's failure as the status and detail it would have had alone.
func itemError(ctx context.Context, err error) (int32, string, []*scoringv1.FieldError) {
	var fieldErrs claim.Errors
	if errors.As(err, &fieldErrs) {
		out := make([]*scoringv1.FieldError, len(fieldErrs))
		for i, e := range fieldErrs {
			out[i] = &scoringv1.FieldError{Field: e.Field, Rule: e.Rule, Message: e.Message}
		}
		return http.StatusUnprocessableEntity, fieldErrs.Error(), out
	}
	e, ok := apierror.As(toAPI(ctx, err))
	if !ok {
		return http.StatusInternalServerError, "Internal Server Error", nil
	}
	detail, _ := e.Body["detail"].(string)
	return int32(e.Status), detail, nil
}

// render builds the score response: exactly the fields of README "Score response".
func render(sc score.Scored) *scoringv1.ScoreResult {
	d := sc.Decision
	resp := &scoringv1.ScoreResult{
		Workflow: string(d.Workflow), Score: d.Score, RiskLevel: d.RiskLevel, Confidence: d.Confidence,
		ModelVersion: d.ModelVersion, Explanation: &scoringv1.Explanation{TopFactors: make([]*scoringv1.Factor, len(d.Factors))},
		Details:  &scoringv1.Details{Workflow: string(d.Workflow)},
		ScoredAt: timestamppb.New(sc.At.Truncate(time.Millisecond)),
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
