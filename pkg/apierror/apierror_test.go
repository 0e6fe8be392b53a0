package apierror_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

func TestStatusRoundTripKeepsStatusAndBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      *apierror.Error
		wantCode codes.Code
		wantBody string
	}{
		{"string detail", apierror.New(http.StatusUnauthorized, "Invalid API key"), codes.Unauthenticated, `{"detail":"Invalid API key"}`},
		{"coded detail", apierror.Coded(http.StatusConflict, "watch_exists", "already watched", map[string]any{"watchId": "w1"}), codes.AlreadyExists,
			`{"detail":{"error":"watch_exists","message":"already watched","watchId":"w1"}}`},
		{"validation list", apierror.Validation(apierror.Violation{Loc: []any{"query", "limit"}, Msg: "must be at most 100", Type: "less_than_equal"}),
			codes.InvalidArgument, `{"detail":[{"loc":["query","limit"],"msg":"must be at most 100","type":"less_than_equal"}]}`},
		{"payment required", apierror.Newf(http.StatusPaymentRequired, "trial of %d calls used", 50), codes.FailedPrecondition, `{"detail":"trial of 50 calls used"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := status.Convert(tt.err)
			if st.Code() != tt.wantCode {
				t.Errorf("code: got %v, want %v", st.Code(), tt.wantCode)
			}
			back, ok := apierror.FromStatus(st)
			if !ok || back.Status != tt.err.Status {
				t.Fatalf("FromStatus: got %v %v, want status %d", back, ok, tt.err.Status)
			}
			got, _ := json.Marshal(back.Body)
			if string(got) != tt.wantBody {
				t.Errorf("body: got %s, want %s", got, tt.wantBody)
			}
		})
	}
}

func TestFromStatusWithoutDetail(t *testing.T) {
	t.Parallel()
	if _, ok := apierror.FromStatus(status.New(codes.NotFound, "x")); ok {
		t.Error("a plain status has no HTTP error")
	}
}

func TestCodeFromHTTP(t *testing.T) {
	t.Parallel()
	for httpStatus, want := range map[int]codes.Code{
		400: codes.InvalidArgument, 401: codes.Unauthenticated, 402: codes.FailedPrecondition, 403: codes.PermissionDenied,
		404: codes.NotFound, 409: codes.AlreadyExists, 413: codes.OutOfRange, 422: codes.InvalidArgument,
		429: codes.ResourceExhausted, 500: codes.Internal, 502: codes.Internal, 503: codes.Unavailable, 504: codes.DeadlineExceeded,
	} {
		if got := apierror.CodeFromHTTP(httpStatus); got != want {
			t.Errorf("CodeFromHTTP(%d): got %v, want %v", httpStatus, got, want)
		}
	}
}
