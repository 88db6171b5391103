#!/usr/bin/env bash
# The program as the engine runs it (Pulumi.yaml: runtime.options.binary).
# `go install` rebuilds only when a source or dependency changed (Go's own
# staleness check, by content), so the engine never runs a stale program,
# and an unchanged program is not linked again: a plain `go build` spent 4
# of a warm preview's 5 seconds relinking. On a cold build, -v names each
# package as it compiles, instead of minutes of dots.
set -euo pipefail
bin="${GPU_NODE_POOLS_PROGRAM_BIN:-$PWD/.pulumi-state/bin}"
# -mod=readonly whatever the caller's GOFLAGS say: a preview never rewrites
# go.mod or go.sum (make vet keeps them tidy).
GOBIN="$bin" GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly" go install -v . >&2
exec "$bin/gpu-node-pools"
