#!/bin/sh
# Prints the -ldflags value that stamps version, commit and build time into
# github.com/trustlayer/trustlayer/pkg/buildinfo (served at /v1/build). One place for the Makefile,
# deploy/local/run.sh and the Dockerfile:
#
#     go build -ldflags "$(deploy/ldflags.sh)" ./services/scoring/cmd/scoring
#
# VERSION, COMMIT and BUILD_TIME win when set and non-empty (a Docker build has no .git to ask);
# otherwise they come from git, or "dev"/"unknown" outside a checkout. None of the values contain
# spaces, so the output can be passed as one -ldflags argument.
set -eu

cd "$(dirname "$0")/.."
pkg=github.com/trustlayer/trustlayer/pkg/buildinfo

version=${VERSION:-}
[ -n "$version" ] || version=$(git describe --tags --always --dirty 2>/dev/null) || version=dev
[ -n "$version" ] || version=dev
commit=${COMMIT:-}
[ -n "$commit" ] || commit=$(git rev-parse HEAD 2>/dev/null) || commit=unknown
[ -n "$commit" ] || commit=unknown
build_time=${BUILD_TIME:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}

printf '%s\n' "-X $pkg.version=$version -X $pkg.commit=$commit -X $pkg.buildTime=$build_time"
