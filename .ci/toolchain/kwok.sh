#!/usr/bin/env bash
# Builds KWOK (Kubernetes WithOut Kubelet: keeps fake Nodes Ready and runs
# the pods the scheduler binds to them, with no kubelet) from its Go module
# into the per-user toolchain cache, with the "fast" node and pod stages the
# module ships (kwok exits without stages): about 2 minutes cold, seconds
# when cached. Prints the bin directory.
set -euo pipefail
VERSION=v0.8.0
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/kwok-$VERSION/bin"
if [ ! -x "$BIN/kwok" ] || [ ! -s "$BIN/stages.yaml" ]; then
	echo "toolchain: building kwok $VERSION (about 2 minutes cold)" >&2
	dir=$(fresh_dir kwok)
	mkdir -p "$BIN"
	printf 'module gpu-node-pools-toolchain/kwok\n\ngo 1.26\n\nrequire sigs.k8s.io/kwok %s\n' "$VERSION" >"$dir/go.mod"
	build_tool "$dir" "$BIN" kwok sigs.k8s.io/kwok/cmd/kwok
	src=$(cd "$dir" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
	{
		for f in node/fast/node-initialize.yaml pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
			echo "---"
			cat "$src/kustomize/stage/$f"
		done
	} >"$BIN/stages.yaml.tmp"
	mv "$BIN/stages.yaml.tmp" "$BIN/stages.yaml"
fi
echo "$BIN"
