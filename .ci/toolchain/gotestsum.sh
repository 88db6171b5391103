#!/usr/bin/env bash
# Builds gotestsum (go test's runner with a JSON record of every test's
# time: make test's timings) from its Go module into the per-user toolchain
# cache: under a minute cold, nothing when cached. Prints the bin directory.
set -euo pipefail
VERSION=v1.13.0
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/gotestsum-$VERSION/bin"
if [ ! -x "$BIN/gotestsum" ]; then
	echo "toolchain: building gotestsum $VERSION" >&2
	GOBIN="$BIN" GOFLAGS=-buildvcs=false GOTOOLCHAIN=local go install "gotest.tools/gotestsum@$VERSION"
fi
echo "$BIN"
