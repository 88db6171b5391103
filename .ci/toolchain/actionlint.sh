#!/usr/bin/env bash
# Runs actionlint on the GitHub workflows, building it once from its Go
# module into the per-user toolchain cache.
set -euo pipefail
VERSION=v1.7.12
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/actionlint-$VERSION/bin"
if [ ! -x "$BIN/actionlint" ]; then
	echo "toolchain: building actionlint $VERSION" >&2
	GOBIN="$BIN" GOFLAGS=-buildvcs=false GOTOOLCHAIN=local go install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION"
fi
exec "$BIN/actionlint" -color=false "$@"
