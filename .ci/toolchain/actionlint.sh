#!/usr/bin/env bash
# Runs actionlint on the GitHub workflows, building it once from its Go
# module into the per-user toolchain cache.
set -euo pipefail
VERSION=v1.7.12
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/actionlint-$VERSION/bin"
go_install "$BIN" "github.com/rhysd/actionlint/cmd/actionlint@$VERSION"
exec "$BIN/actionlint" -color=false "$@"
