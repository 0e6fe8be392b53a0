// Package buildinfo holds what the linker stamps into every service binary and serves it as GET /v1/build.
package buildinfo

import (
	"context"
	"runtime"
	"runtime/debug"

	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
)

// Set at build time with -ldflags "-X github.com/trustlayer/trustlayer/pkg/buildinfo.version=..." (see
// deploy/ldflags.sh); unstamped builds (go test, go run) report the placeholders.
var (
	version   = "dev"
	commit    = "unknown"
	buildTime = "unknown"
)

// Info describes one running binary.
type Info struct {
	Service   string
	Version   string
	Commit    string
	BuildTime string
	GoVersion string
}

// Get returns the stamped build of the named service. When the commit was not stamped it falls back to
// the VCS revision the Go toolchain recorded, if any.
func Get(service string) Info {
	info := Info{Service: service, Version: version, Commit: commit, BuildTime: buildTime, GoVersion: runtime.Version()}
	if info.Commit == "unknown" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					info.Commit = s.Value
				}
			}
		}
	}
	return info
}

// Server implements platformv1.BuildServiceServer for one service.
type Server struct {
	platformv1.UnimplementedBuildServiceServer
	info Info
}

// NewServer returns the BuildService of the named service.
func NewServer(service string) *Server {
	return &Server{info: Get(service)}
}

// GetBuild returns the build of the running binary.
func (s *Server) GetBuild(context.Context, *platformv1.GetBuildRequest) (*platformv1.GetBuildResponse, error) {
	return &platformv1.GetBuildResponse{
		Service:   s.info.Service,
		Version:   s.info.Version,
		Commit:    s.info.Commit,
		BuildTime: s.info.BuildTime,
		GoVersion: s.info.GoVersion,
	}, nil
}
