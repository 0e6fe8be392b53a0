package serve_test

import (
	"context"
	"errors"
	"net/http"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	platformtestv1 "github.com/trustlayer/trustlayer/proto/platformtest/v1"
)

// echoServer implements the test-only EchoService.
type echoServer struct {
	platformtestv1.UnimplementedEchoServiceServer
	started chan struct{} // closed when a slow call has begun
}

func (s *echoServer) CreateEcho(ctx context.Context, req *platformtestv1.CreateEchoRequest) (*platformtestv1.CreateEchoResponse, error) {
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	return &platformtestv1.CreateEchoResponse{Text: req.GetText(), Repeat: req.GetRepeat(), AdminTokenSeen: len(md.Get("x-admin-token")) == 1}, nil
}

// secretCause stands for an internal error message that must never reach a client.
const secretCause = "password=hunter2 at db-7.internal"

func (s *echoServer) GetEcho(ctx context.Context, req *platformtestv1.GetEchoRequest) (*platformtestv1.GetEchoResponse, error) {
	switch req.GetFail() {
	case "api":
		return nil, apierror.Coded(http.StatusPaymentRequired, "trial_exhausted", "trial calls used up", map[string]any{"upgrade_url": "https://example.com/up"})
	case "validation":
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"body", "items", 0, "url"}, Msg: "URL must use https", Type: "value_error"})
	case "internal":
		return nil, errors.New(secretCause)
	case "panic":
		panic(secretCause)
	case "slow":
		close(s.started)
		time.Sleep(700 * time.Millisecond)
	}
	return &platformtestv1.GetEchoResponse{Id: req.GetId(), Limit: req.GetLimit()}, nil
}

func (s *echoServer) DeleteEcho(ctx context.Context, _ *platformtestv1.DeleteEchoRequest) (*platformtestv1.DeleteEchoResponse, error) {
	return &platformtestv1.DeleteEchoResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}
