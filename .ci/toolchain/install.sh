#!/usr/bin/env bash
# Installs the pinned Pulumi toolchain — the CLI and engine, the Go language
# host and the Kubernetes resource provider — built from their Go modules,
# into a per-user cache keyed by version. A second run costs nothing.
#
# Prints the bin directory on its last line. With arguments, builds only
# the parts they name (cli: the CLI and the language host; kubernetes: the
# provider), so that all.sh can build them side by side with other tools.
# Release binaries cannot be
# downloaded on our build machines; the Go module proxy is all this needs.
# The azure-native and random providers cannot be built from served modules:
# AKS stacks get them from Pulumi's usual plugin source on a machine with
# internet access.
set -euo pipefail

PULUMI_VERSION=v3.274.1
# The current language host module is not served; sdk v3.62.0 is the newest
# that still contains it, and it runs today's Go programs fine.
LANGUAGE_GO_VERSION=v3.62.0
# Keep in step with github.com/pulumi/pulumi-kubernetes/sdk/v4 in go.mod.
KUBERNETES_VERSION=4.25.0
KUBERNETES_PROVIDER_MODULE=v4.0.0-20260115033456-f47bc2d6f199 # the commit tagged v4.25.0

. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/pulumi-$PULUMI_VERSION+go-$LANGUAGE_GO_VERSION+kubernetes-$KUBERNETES_VERSION/bin"
mkdir -p "$BIN"

log() { echo "toolchain: $*" >&2; }

build_pulumi() {
	[ -x "$BIN/pulumi" ] && return
	log "building pulumi $PULUMI_VERSION (about 20 minutes cold)"
	local dir; dir=$(fresh_dir pulumi)
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/pulumi

go 1.26.6

require (
	github.com/pulumi/pulumi/pkg/v3 $PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 $PULUMI_VERSION
)

// Copied from upstream's go.mod: replaces in a dependency are ignored.
replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e

replace golang.org/x/text => golang.org/x/text v0.41.0
MOD
	build_tool "$dir" "$BIN" pulumi github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
		-ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION"
}

build_language_go() {
	[ -x "$BIN/pulumi-language-go.real" ] && return
	if [ -x "$BIN/pulumi-language-go" ] && [ "$(head -c 2 "$BIN/pulumi-language-go")" != '#!' ]; then
		mv "$BIN/pulumi-language-go" "$BIN/pulumi-language-go.real" # a cache from before the shim
		return
	fi
	log "building pulumi-language-go from sdk $LANGUAGE_GO_VERSION"
	local dir; dir=$(fresh_dir language-go)
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/language-go

go 1.26.6

require github.com/pulumi/pulumi/sdk/v3 $LANGUAGE_GO_VERSION

replace golang.org/x/text => golang.org/x/text v0.3.6
MOD
	build_tool "$dir" "$BIN" pulumi-language-go.real github.com/pulumi/pulumi/sdk/v3/go/pulumi-language-go \
		-ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$LANGUAGE_GO_VERSION"
}

# The engine starts the language host by the name pulumi-language-go, with
# the engine's address as its only argument, in the project directory. The
# host built above takes Pulumi.yaml's runtime.options.binary only as its
# -binary flag, and today's CLI passes runtime options in each request's
# program info instead (sdk v3.274.1 go/common/resource/plugin/
# langruntime_plugin.go, buildArgsForNewPlugin: the address alone), which
# that host does not read: it compiled and linked the program anew for every
# preview, up, refresh and destroy. The shim reads the option where the host
# starts and passes it as the flag, as the host's own main.go expects.
install_language_shim() {
	local shim tmp
	shim=$(
		cat <<'SHIM'
#!/bin/sh
real="$(dirname "$(readlink -f "$0")")/pulumi-language-go.real"
binary=$(awk '/^[^[:space:]#]/ { rt = ($0 ~ /^runtime:/) }
	rt && /^[[:space:]]+binary:/ { sub(/^[[:space:]]+binary:[[:space:]]*/, ""); sub(/[[:space:]]+#.*$/, ""); gsub(/["\047]/, ""); print; exit }' Pulumi.yaml 2>/dev/null)
[ -z "$binary" ] || exec "$real" -binary "$binary" "$@"
exec "$real" "$@"
SHIM
	)
	# every make preview runs this script, tests many at once: write only
	# when the shim changed, through a name of this process's own
	[ "$(cat "$BIN/pulumi-language-go" 2>/dev/null)" != "$shim" ] || return 0
	tmp="$BIN/.pulumi-language-go.$$"
	printf '%s\n' "$shim" >"$tmp"
	chmod 0755 "$tmp"
	mv "$tmp" "$BIN/pulumi-language-go"
}

build_kubernetes() {
	[ -x "$BIN/pulumi-resource-kubernetes" ] && return
	log "building pulumi-resource-kubernetes $KUBERNETES_VERSION (about 17 minutes cold)"
	local dir; dir=$(fresh_dir kubernetes)
	cat >"$dir/go.mod" <<MOD
module gpu-node-pools-toolchain/kubernetes

go 1.26.6

require (
	github.com/pulumi/pulumi-kubernetes/provider/v4 $KUBERNETES_PROVIDER_MODULE
	github.com/pulumi/pulumi-kubernetes/sdk/v4 v$KUBERNETES_VERSION
)

// Upstream points the SDK at ../sdk; use the released SDK of the same commit.
replace github.com/pulumi/pulumi-kubernetes/sdk/v4 => github.com/pulumi/pulumi-kubernetes/sdk/v4 v$KUBERNETES_VERSION
MOD
	local src
	src=$(cd "$dir" && go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	# main.go embeds schema files that upstream generates at release time.
	for f in main.go generate.go schema.json terraform-mapping.json; do
		install -m 0644 "$src/cmd/pulumi-resource-kubernetes/$f" "$dir/$f"
	done
	(cd "$dir" && go mod tidy >&2 && VERSION=$KUBERNETES_VERSION go run generate.go >&2 &&
		go build -ldflags "-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_VERSION" \
			-o "$BIN/pulumi-resource-kubernetes.tmp" .)
	mv "$BIN/pulumi-resource-kubernetes.tmp" "$BIN/pulumi-resource-kubernetes"
}

[ $# -gt 0 ] || set -- cli kubernetes
for part in "$@"; do
	case $part in
	cli)
		# one command a line: set -e does not apply inside an && list,
		# where a failed build went on to "ready"
		build_language_go
		install_language_shim
		build_pulumi
		;;
	kubernetes) build_kubernetes ;;
	*)
		echo "install.sh: unknown part $part (cli, kubernetes)" >&2
		exit 2
		;;
	esac
done
log "$* ready in $BIN"
echo "$BIN"
