package api

import (
	"context"
	"net/http"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
)

// Feedback implements scoring.v1.FeedbackService.
type Feedback struct {
	scoringv1.UnimplementedFeedbackServiceServer
	svc *feedback.Service
}

// NewFeedback returns the service.
func NewFeedback(svc *feedback.Service) *Feedback { return &Feedback{svc: svc} }

// SubmitFeedback is POST /v1/feedback (202). It is not billable.
func (f *Feedback) SubmitFeedback(ctx context.Context, req *scoringv1.SubmitFeedbackRequest) (*scoringv1.SubmitFeedbackResponse, error) {
	key := callerFrom(ctx)
	fb, err := f.svc.Submit(ctx, key.ID, key.AccountID, feedback.Input{
		RequestID: req.GetRequestId(), Endpoint: req.GetEndpoint(), ObservedOutcome: req.GetObservedOutcome(),
		ExpectedOutcome: req.GetExpectedOutcome(), ConfidenceMismatch: req.GetConfidenceMismatch(), Notes: req.GetNotes(),
	})
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusAccepted)
	return &scoringv1.SubmitFeedbackResponse{Feedback: &scoringv1.FeedbackAccepted{
		FeedbackId: fb.ID, RequestId: fb.RequestID, Status: "accepted", Billable: false, ReceivedAt: timestamppb.New(fb.ReceivedAt),
	}}, nil
}
