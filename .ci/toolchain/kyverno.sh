#!/usr/bin/env bash
# Builds the Kyverno CLI (the real policy engine, offline) from its Go module
# into the per-user toolchain cache: about 15 minutes cold, seconds when
# cached. Prints the bin directory.
set -euo pipefail
VERSION=v1.19.0
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/kyverno-$VERSION/bin"
if [ ! -x "$BIN/kyverno" ]; then
	echo "toolchain: building the kyverno CLI $VERSION (about 15 minutes cold)" >&2
	dir=$(fresh_dir kyverno)
	mkdir -p "$BIN"
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/kyverno

go 1.26

require github.com/kyverno/kyverno $VERSION

// Copied from upstream's go.mod: replaces in a dependency are ignored.
replace k8s.io/pod-security-admission => github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f
MOD
	build_tool "$dir" "$BIN" kyverno github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno \
		-ldflags "-X github.com/kyverno/kyverno/pkg/version.BuildVersion=$VERSION"
fi
echo "$BIN"
