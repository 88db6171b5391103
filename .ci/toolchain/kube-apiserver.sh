#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager (garbage collection,
# namespace deletion, node lifecycle and the workload controllers),
# kube-scheduler and kubectl from the Go module k8s.io/kubernetes into
# the per-user toolchain cache (about 25 minutes cold, seconds when cached),
# for tests that need the real Kubernetes API. Prints the bin directory.
set -euo pipefail
VERSION=v1.37.2
STAGING_VERSION=v0.37.2
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/kubernetes-$VERSION/bin"

CMDS="kube-apiserver kube-controller-manager kube-scheduler kubectl"
missing=""
for cmd in $CMDS; do
	[ -x "$BIN/$cmd" ] || missing="$missing $cmd"
done

if [ -n "$missing" ]; then
	echo "toolchain: building$missing $VERSION (about 30 minutes cold)" >&2
	dir=$(fresh_dir kube-apiserver) # not "kubernetes": install.sh builds the provider there
	mkdir -p "$BIN"
	# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
	# them with local paths, which a dependency's go.mod cannot do: replace
	# each with its released version instead (the two samples are not served
	# and not needed).
	{
		echo "module gpu-node-pools-toolchain/kubernetes"
		echo
		echo "go 1.26.0"
		echo
		echo "godebug default=go1.26"
		echo
		echo "require k8s.io/kubernetes $VERSION"
		echo
		for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
			cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
			cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
			kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
			mount-utils pod-security-admission sample-apiserver streaming; do
			echo "replace k8s.io/$m => k8s.io/$m $STAGING_VERSION"
		done
	} >"$dir/go.mod"
	printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"$dir/tools.go"
	ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
	(cd "$dir" && go mod tidy >&2 &&
		for cmd in $missing; do
			go build -ldflags "$ldflags" -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd" || exit 1
		done)
	for cmd in $missing; do
		mv "$BIN/$cmd.tmp" "$BIN/$cmd"
	done
fi
echo "$BIN"
