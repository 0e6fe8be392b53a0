package wire

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// recordingServer answers the hot routes and one legacy route with fixed results and keeps what
// the gateway decoded.
type recordingServer struct {
	scoringv1.UnimplementedScoringServiceServer
	mu       sync.Mutex
	requests []proto.Message
}

func (s *recordingServer) record(m proto.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, proto.Clone(m))
}

func (s *recordingServer) Score(_ context.Context, req *scoringv1.ScoreRequest) (*scoringv1.ScoreResponse, error) {
	s.record(req)
	if req.GetWorkflow() == "no result" {
		return &scoringv1.ScoreResponse{}, nil
	}
	return &scoringv1.ScoreResponse{Result: sampleResult()}, nil
}

func (s *recordingServer) ScoreBatch(_ context.Context, req *scoringv1.ScoreBatchRequest) (*scoringv1.ScoreBatchResponse, error) {
	s.record(req)
	return sampleBatch(), nil
}

func (s *recordingServer) ScoreDenial(_ context.Context, req *scoringv1.ScoreDenialRequest) (*scoringv1.ScoreDenialResponse, error) {
	s.record(req)
	return &scoringv1.ScoreDenialResponse{Result: sampleResult()}, nil
}

// TestGatewayAnswersMatchReference serves the same requests through two gateway muxes, one with the
// reference marshaler and one with the codec, and wants the same answers and the same decoded
// requests: it checks which Marshaler methods the generated handlers call, with which types.
func TestGatewayAnswersMatchReference(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	serve := func(m runtime.Marshaler) (*runtime.ServeMux, *recordingServer) {
		mux := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, m))
		srv := &recordingServer{}
		if err := scoringv1.RegisterScoringServiceHandlerServer(context.Background(), mux, srv); err != nil {
			t.Fatal(err)
		}
		return mux, srv
	}
	refMux, refSrv := serve(ref)
	codecMux, codecSrv := serve(New(ref))
	for _, tc := range []struct{ path, body string }{
		{"/v1/score", `{"workflow":"healthcare.denial","payload":{"cpt_code":"99214","units":1},"options":{"allow_fallback":false}}`},
		{"/v1/score", `{"workflow":"no result"}`},
		{"/v1/score", ``},
		{"/v1/score", `{"workflow":1}`},
		{"/v1/score", `{"payload":{"a":1,"a":2}}`},
		{"/v1/score/batch", string(sampleBatchBody())},
		{"/v1/score/batch", `{"items":[null]}`},
		{"/v1/claims/denial/score?operating_point=balanced", `{"cpt_code":"99214"}`},
	} {
		var want, got *httptest.ResponseRecorder
		for _, side := range []struct {
			mux *runtime.ServeMux
			rec **httptest.ResponseRecorder
		}{{refMux, &want}, {codecMux, &got}} {
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			*side.rec = httptest.NewRecorder()
			side.mux.ServeHTTP(*side.rec, req)
		}
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("POST %s %q: got %d %s %s, want %d %s %s", tc.path, tc.body,
				got.Code, got.Header().Get("Content-Type"), got.Body, want.Code, want.Header().Get("Content-Type"), want.Body)
		}
	}
	if len(codecSrv.requests) != len(refSrv.requests) {
		t.Fatalf("server saw %d requests through the codec, want %d", len(codecSrv.requests), len(refSrv.requests))
	}
	for i := range refSrv.requests {
		if !proto.Equal(codecSrv.requests[i], refSrv.requests[i]) {
			t.Errorf("request %d: got %v, want %v", i, codecSrv.requests[i], refSrv.requests[i])
		}
	}
}
