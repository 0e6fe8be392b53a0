package serve

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	platformtestv1 "github.com/trustlayer/trustlayer/proto/platformtest/v1"
)

// metadataEcho answers with what the in-process call gave it: the incoming metadata as the limit, and
// a header and a trailer.
type metadataEcho struct {
	platformtestv1.UnimplementedEchoServiceServer
}

func (metadataEcho) GetEcho(ctx context.Context, req *platformtestv1.GetEchoRequest) (*platformtestv1.GetEchoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get("x-caller")) != 1 {
		return nil, status.Error(codes.InvalidArgument, "no incoming metadata")
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs("x-request-id", "r-1")); err != nil {
		return nil, err
	}
	if err := grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t-1")); err != nil {
		return nil, err
	}
	if req.GetFail() == "not-found" {
		return nil, status.Error(codes.NotFound, "no such echo")
	}
	return &platformtestv1.GetEchoResponse{Id: req.GetId(), Limit: 7}, nil
}

type ctxKey struct{}

func TestInProcessCall(t *testing.T) {
	var intercepted []string
	interceptor := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		intercepted = append(intercepted, info.FullMethod)
		if ctx.Value(ctxKey{}) != "caller" {
			t.Errorf("the handler does not run in the caller's context")
		}
		return handler(ctx, req)
	}
	conn := newInProcess(interceptor)
	conn.register(&platformtestv1.EchoService_ServiceDesc, metadataEcho{})
	client := platformtestv1.NewEchoServiceClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.WithValue(context.Background(), ctxKey{}, "caller"), "x-caller", "gateway")

	var header, trailer metadata.MD
	resp, err := client.GetEcho(ctx, &platformtestv1.GetEchoRequest{Id: 42}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil || resp.GetId() != 42 || resp.GetLimit() != 7 {
		t.Fatalf("GetEcho: %v %v", resp, err)
	}
	if header.Get("x-request-id")[0] != "r-1" || trailer.Get("x-trailer")[0] != "t-1" {
		t.Fatalf("header %v, trailer %v", header, trailer)
	}
	if len(intercepted) != 1 || intercepted[0] != "/platformtest.v1.EchoService/GetEcho" {
		t.Fatalf("interceptor saw %v", intercepted)
	}

	// A handler's error reaches the caller as it is, with the header it set before failing.
	header = nil
	_, err = client.GetEcho(ctx, &platformtestv1.GetEchoRequest{Fail: "not-found"}, grpc.Header(&header))
	if status.Code(err) != codes.NotFound || header.Get("x-request-id")[0] != "r-1" {
		t.Fatalf("failing call: %v, header %v", err, header)
	}
	// Methods and services that are not registered are Unimplemented, as on a gRPC server.
	if _, err := client.DeleteEcho(ctx, &platformtestv1.DeleteEchoRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unimplemented method: %v", err)
	}
	if err := conn.Invoke(ctx, "/no.such.Service/Get", &platformtestv1.GetEchoRequest{}, &platformtestv1.GetEchoResponse{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown service: %v", err)
	}
	if _, err := conn.NewStream(ctx, &grpc.StreamDesc{}, "/platformtest.v1.EchoService/Watch"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("stream: %v", err)
	}
}
