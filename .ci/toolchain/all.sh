#!/usr/bin/env bash
# Builds every tool the tests need (each script once per version into the
# per-user cache), two at a time (the cores here), longest first, and says
# at least once a minute what is still building and for how long. Prints
# the environment the tests read, as export lines (make test evals them).
# Nothing to do when all are cached: a second or two.
set -euo pipefail
cd "$(dirname "$0")"
jobs=${TOOLCHAIN_JOBS:-$(nproc 2>/dev/null || echo 2)}

# the variable a tool's bin directory goes to (its script's last line; "-"
# for a part of another tool's) and the script with its arguments, longest
# build first (cold, on 2 cores, two at a time: the Pulumi CLI and the
# Kubernetes binaries about 15 minutes each, the Kubernetes provider and
# Kyverno about 12, the External Secrets Operator 8). The Pulumi CLI and
# its Kubernetes provider are separate jobs: one after the other they were
# the longest chain (29 minutes of a 38-minute cold build).
tools=(
	"GPU_NODE_POOLS_PULUMI_BIN install.sh cli"
	"GPU_NODE_POOLS_KUBE_BIN kube-apiserver.sh"
	"- install.sh kubernetes"
	"GPU_NODE_POOLS_KYVERNO_BIN kyverno.sh"
	"GPU_NODE_POOLS_ESO_BIN external-secrets.sh"
	"GPU_NODE_POOLS_RCLONE_BIN rclone.sh"
	"GPU_NODE_POOLS_ETCD_BIN etcd.sh"
	"GPU_NODE_POOLS_KWOK_BIN kwok.sh"
	"GPU_NODE_POOLS_AZURITE_BIN azurite.sh"
	"GPU_NODE_POOLS_GOTESTSUM_BIN gotestsum.sh"
)
logs=$(mktemp -d)
heart=""
trap 'rm -rf "$logs"; [ -z "$heart" ] || kill "$heart" 2>/dev/null' EXIT
start=$SECONDS

elapsed() { local d=$(($(date +%s) - $1)); echo "$((d / 60))m$((d % 60))s"; }

# key "SCRIPT [ARGS...]": the name a build's files in $logs go under
key() { echo "$1" | tr ' ' '-'; }

# build SCRIPT [ARGS...]: one tool, its output and status kept in $logs
build() {
	local s t0
	s=$(key "$*")
	t0=$(date +%s)
	echo "$t0" >"$logs/$s.start"
	if ./"$1" "${@:2}" >"$logs/$s.out" 2>"$logs/$s.log"; then
		[ $(($(date +%s) - t0)) -lt 5 ] || echo "toolchain: $* done in $(elapsed "$t0")" >&2
		echo 0 >"$logs/$s.rc"
	else
		echo "toolchain: $* FAILED after $(elapsed "$t0"); its output:" >&2
		tail -n 40 "$logs/$s.log" >&2
		echo 1 >"$logs/$s.rc"
	fi
}

# every minute, what is still building and its latest line
(
	while sleep 60; do
		for f in "$logs"/*.start; do
			[ -e "$f" ] || continue
			s=$(basename "$f" .start)
			[ -e "$logs/$s.rc" ] && continue
			echo "toolchain: $s building for $(elapsed "$(cat "$f")"): $(grep -v '^$' "$logs/$s.log" | tail -n 1 | cut -c1-120)" >&2
		done
	done
) >&2 &
heart=$!

n=0
for entry in "${tools[@]}"; do
	if [ "$n" -ge "$jobs" ]; then
		wait -n || true # a slot frees when any build ends
		n=$((n - 1))
	fi
	# shellcheck disable=SC2086 # the script and its arguments
	build ${entry#* } &
	n=$((n + 1))
done
wait_builds() { for p in $(jobs -p); do [ "$p" = "$heart" ] || wait "$p" || true; done; }
wait_builds
failed=""
for entry in "${tools[@]}"; do
	[ "$(cat "$logs/$(key "${entry#* }").rc" 2>/dev/null)" = 0 ] || failed="$failed ${entry#* },"
done
if [ -n "$failed" ]; then
	echo "toolchain: failed:${failed%,}" >&2
	exit 1
fi
for entry in "${tools[@]}"; do
	var=${entry%% *}
	[ "$var" = - ] || echo "export $var=$(tail -n 1 "$logs/$(key "${entry#* }").out")"
done
[ $((SECONDS - start)) -lt 5 ] || echo "toolchain: all ready in $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s" >&2
