#!/usr/bin/env bash
# Builds etcd (for the real kube-apiserver in tests) from its Go module into
# the per-user toolchain cache, about a minute cold. Prints the bin directory.
set -euo pipefail
VERSION=v3.7.0
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/etcd-$VERSION/bin"
if [ ! -x "$BIN/etcd" ]; then
	echo "toolchain: building etcd $VERSION" >&2
	dir=$(fresh_dir etcd)
	mkdir -p "$BIN"
	# The server module points its sibling modules at ../ paths: use their
	# released versions instead.
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/etcd

go 1.26

require go.etcd.io/etcd/server/v3 $VERSION

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $VERSION
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $VERSION
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $VERSION
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $VERSION
)
MOD
	build_tool "$dir" "$BIN" etcd go.etcd.io/etcd/server/v3
fi
echo "$BIN"
