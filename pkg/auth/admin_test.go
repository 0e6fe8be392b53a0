package auth

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestAdminTokenMatches(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		presented, configured string
		want                  bool
	}{
		{"s3cret-admin-token", "s3cret-admin-token", true},
		{"s3cret-admin-tokeN", "s3cret-admin-token", false},
		{"s3cret", "s3cret-admin-token", false},
		{"", "s3cret-admin-token", false},
		{"", "", false},
	} {
		if got := AdminTokenMatches(tt.presented, tt.configured); got != tt.want {
			t.Errorf("AdminTokenMatches(%q, %q): got %v, want %v", tt.presented, tt.configured, got, tt.want)
		}
	}
}

func TestRequireAdmin(t *testing.T) {
	t.Parallel()
	gate := RequireAdmin("s3cret-admin-token", "/ingestion.v1.")
	ok := func(context.Context, any) (any, error) { return "ok", nil }
	for _, tt := range []struct {
		method string
		token  []string
		pass   bool
	}{
		{"/ingestion.v1.SourceService/ListSources", []string{"s3cret-admin-token"}, true},
		{"/ingestion.v1.SourceService/ListSources", nil, false},
		{"/ingestion.v1.SourceService/ListSources", []string{"wrong"}, false},
		{"/ingestion.v1.SourceService/ListSources", []string{"s3cret-admin-token", "s3cret-admin-token"}, false},
		{"/platform.v1.BuildService/GetBuild", nil, true},
		{"/grpc.health.v1.Health/Check", nil, true},
	} {
		ctx := context.Background()
		if tt.token != nil {
			md := metadata.MD{}
			for _, v := range tt.token {
				md.Append("x-admin-token", v)
			}
			ctx = metadata.NewIncomingContext(ctx, md)
		}
		_, err := gate(ctx, nil, &grpc.UnaryServerInfo{FullMethod: tt.method}, ok)
		if (err == nil) != tt.pass {
			t.Errorf("%s with %v: got %v, want pass=%v", tt.method, tt.token, err, tt.pass)
		}
		if err != nil && err != ErrAdminToken {
			t.Errorf("%s: got %v, want ErrAdminToken", tt.method, err)
		}
	}
}
