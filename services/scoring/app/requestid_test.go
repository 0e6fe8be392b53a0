package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
)

// TestRequestIDOnEveryScoringAnswer: every scoring answer carries an x-request-id (README "Score
// response"). A scoring route's refusals carry one too (authentication, a body the gateway cannot decode, field
// validation), exactly one per answer; other routes do not.
func TestRequestIDOnEveryScoringAnswer(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	key := s.paidKey()
	score := map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()}
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		wantID                   bool
	}{
		{"scored", "POST", "/v1/score", mustJSON(score), bearer(key), 200, true},
		{"no key", "POST", "/v1/score", mustJSON(score), nil, 401, true},
		{"batch without key", "POST", "/v1/score/batch", `{"items":[]}`, nil, 401, true},
		{"legacy route without key", "POST", "/v1/claims/denial/score", mustJSON(map[string]any{"payload": denialClaim()}), nil, 401, true},
		{"undecodable body", "POST", "/v1/score", `{"workflow": `, bearer(key), 422, true},
		{"invalid field", "POST", "/v1/score", mustJSON(map[string]any{"workflow": "healthcare.denial", "payload": with(denialClaim(), "place_of_service", "office")}), bearer(key), 422, true},
		{"not a scoring route", "GET", "/v1/usage", "", nil, 401, false},
	} {
		req, err := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ids := resp.Header.Values("X-Request-Id")
		switch {
		case resp.StatusCode != tc.status:
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		case !tc.wantID && len(ids) != 0:
			t.Errorf("%s: x-request-id %v on an answer of a route that scores nothing", tc.name, ids)
		case tc.wantID && len(ids) != 1:
			t.Errorf("%s: x-request-id %v, want exactly one", tc.name, ids)
		case tc.wantID:
			if id, err := uuid.Parse(ids[0]); err != nil || id.Version() != 7 {
				t.Errorf("%s: x-request-id %q is not a UUIDv7", tc.name, ids[0])
			}
		}
	}
}

// TestRequestIDOverGRPC: a gRPC caller refused by authentication gets the id as header metadata.
func TestRequestIDOverGRPC(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	conn, err := grpc.NewClient(s.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	payload, err := structpb.NewStruct(denialClaim())
	if err != nil {
		t.Fatal(err)
	}
	var header metadata.MD
	_, err = scoringv1.NewScoringServiceClient(conn).Score(context.Background(),
		&scoringv1.ScoreRequest{Workflow: "healthcare.denial", Payload: payload}, grpc.Header(&header))
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("Score without a key: %v, want Unauthenticated", err)
	}
	if ids := header.Get("x-request-id"); len(ids) != 1 || uuid.Validate(ids[0]) != nil {
		t.Errorf("x-request-id metadata %v, want one UUID", ids)
	}
}
