package platform

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
)

// stream records what an interceptor sets with grpc.SetHeader.
type stream struct{ header metadata.MD }

func (s *stream) Method() string                  { return "/demo.v1.Demo/Call" }
func (s *stream) SetHeader(md metadata.MD) error  { s.header = metadata.Join(s.header, md); return nil }
func (s *stream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }
func (s *stream) SetTrailer(metadata.MD) error    { return nil }

func TestAnswerUnavailable(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	coded := apierror.UnavailableCoded()
	other := errors.New("boom")
	conflict := apierror.New(http.StatusConflict, "taken")
	for _, tc := range []struct {
		name        string
		answer      *apierror.Error // Spec.Unavailable
		err         error
		cancelled   bool
		wantStatus  int // 0: the error passes unchanged
		wantRetry   string
		wantSameErr bool
	}{
		{name: "unreachable database, default answer", err: refused, wantStatus: 503, wantRetry: "5"},
		{name: "unreachable database, the service's answer", answer: coded, err: refused, wantStatus: 503, wantRetry: "5"},
		{name: "already mapped by the service", err: coded, wantStatus: 503, wantRetry: "5", wantSameErr: true},
		{name: "another answer", err: conflict, wantStatus: 409, wantSameErr: true},
		{name: "an unknown error stays a 500 for the platform", err: other, wantSameErr: true},
		{name: "a caller that went away is not an outage", err: refused, cancelled: true, wantSameErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			st := &stream{}
			ctx = grpc.NewContextWithServerTransportStream(ctx, st)
			intercept := answerUnavailable(slog.New(slog.NewTextHandler(io.Discard, nil)), tc.answer)
			_, err := intercept(ctx, nil, &grpc.UnaryServerInfo{FullMethod: st.Method()},
				func(context.Context, any) (any, error) { return nil, tc.err })
			if tc.wantSameErr && err != tc.err {
				t.Fatalf("got %v, want the handler's error unchanged", err)
			}
			e, ok := apierror.As(err)
			switch {
			case tc.wantStatus == 0 && ok:
				t.Errorf("got answer %d, want no answer", e.Status)
			case tc.wantStatus != 0 && (!ok || e.Status != tc.wantStatus):
				t.Errorf("got %v, want status %d", err, tc.wantStatus)
			}
			if tc.answer != nil && tc.wantStatus == 503 && e != tc.answer {
				t.Errorf("got body %v, want the service's answer %v", e.Body, tc.answer.Body)
			}
			if got := st.header.Get("retry-after"); (len(got) == 0 && tc.wantRetry != "") || (len(got) > 0 && got[0] != tc.wantRetry) {
				t.Errorf("retry-after %v, want %q", got, tc.wantRetry)
			}
		})
	}
}
