#!/usr/bin/env bash
# Builds the External Secrets Operator's controller (the real one, with its
# built-in fake provider as a test store) from its Go module into the
# per-user toolchain cache, with the CRDs of the same version beside it:
# about 8 minutes cold, seconds when cached. Prints the bin directory.
#
# v0.16.2, not v1.3.2: from v1.0 the module replaces its apis, runtime,
# providers and generators with nested modules (go.mod `replace ... =>
# ./apis`) that the module zip leaves out and the Go module proxy does not
# serve (404 for github.com/external-secrets/external-secrets/apis), so
# v1.3.2 cannot be built from the registries. v0.16.2 is one module and
# already serves external-secrets.io/v1, the version the program renders.
set -euo pipefail
VERSION=v0.16.2
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/external-secrets-$VERSION/bin"
if [ ! -x "$BIN/external-secrets" ] || [ ! -d "$BIN/crds" ]; then
	echo "toolchain: building the External Secrets Operator $VERSION (about 8 minutes cold)" >&2
	dir=$(fresh_dir external-secrets)
	mkdir -p "$BIN"
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/external-secrets

go 1.26

require github.com/external-secrets/external-secrets $VERSION

// Copied from upstream's go.mod: replaces in a dependency are ignored.
replace github.com/Masterminds/sprig/v3 => github.com/external-secrets/sprig/v3 v3.3.0
MOD
	build_tool "$dir" "$BIN" external-secrets github.com/external-secrets/external-secrets -trimpath -ldflags "-s -w"
	src=$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/external-secrets/external-secrets)
	rm -rf "$BIN/crds.tmp" && mkdir -p "$BIN/crds.tmp"
	cp "$src"/config/crds/bases/external-secrets.io_*.yaml "$src"/config/crds/bases/generators.external-secrets.io_*.yaml "$BIN/crds.tmp/"
	chmod u+w "$BIN"/crds.tmp/*
	rm -rf "$BIN/crds" && mv "$BIN/crds.tmp" "$BIN/crds"
fi
echo "$BIN"
