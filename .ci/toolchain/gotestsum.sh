#!/usr/bin/env bash
# Builds gotestsum (go test's runner with a JSON record of every test's
# time: make test's timings) from its Go module into the per-user toolchain
# cache: under a minute cold, nothing when cached. Prints the bin directory.
set -euo pipefail
VERSION=v1.13.0
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/gotestsum-$VERSION/bin"
go_install "$BIN" "gotest.tools/gotestsum@$VERSION"
echo "$BIN"
