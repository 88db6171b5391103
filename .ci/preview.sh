#!/usr/bin/env bash
# make preview: preview one stack through the real Pulumi engine, with a local
# file backend inside the checkout and the passphrase secrets provider; for a
# stack with renderDir, also `up` it, which writes the manifests.
set -euo pipefail
cd "$(dirname "$0")/.."

STACK="${STACK:-dev}"
if [ ! -f "Pulumi.$STACK.yaml" ]; then
	echo "no stack file Pulumi.$STACK.yaml; stacks here: $(ls Pulumi.*.yaml | sed 's/Pulumi\.\(.*\)\.yaml/\1/' | tr '\n' ' ')" >&2
	exit 2
fi

bin=$(.ci/toolchain/install.sh | tail -n 1)
export PATH="$bin:$PATH"
state="$PWD/.pulumi-state"
mkdir -p "$state/backend"
export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-file://$state/backend}"
export PULUMI_HOME="${PULUMI_HOME:-$state/home}"
# Development default only: real customer stacks use their own passphrase or
# a KMS secrets provider.
export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE-gpu-node-pools-dev}"
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true PULUMI_SKIP_UPDATE_CHECK=true
# Charts come from local archives when there are some (offline machines,
# tests); otherwise from the upstream Helm repositories.
if [ -z "${GPU_NODE_POOLS_CHART_DIR:-}" ] && [ -d "${GPU_NODE_POOLS_SHARED:-../shared}/charts" ]; then
	export GPU_NODE_POOLS_CHART_DIR="$(cd "${GPU_NODE_POOLS_SHARED:-../shared}/charts" && pwd)"
	echo "charts from $GPU_NODE_POOLS_CHART_DIR"
fi

# AKS stacks need the azure-native provider, which cannot be built from the
# modules served to our machines: say so before touching the stack.
target=$(sed -n 's/^[[:space:]]*gpu-node-pools:target:[[:space:]]*\([a-z]*\).*/\1/p' "Pulumi.$STACK.yaml")
if [ "$target" = aks ] && ! command -v pulumi-resource-azure-native >/dev/null &&
	! pulumi plugin ls 2>/dev/null | grep -q '^azure-native .*2\.82\.0'; then
	echo "stack $STACK targets AKS: it needs the azure-native provider 2.82.0 and Azure credentials." >&2
	echo "On a machine with internet access: pulumi plugin install resource azure-native 2.82.0" >&2
	exit 2
fi

pulumi stack select --create --secrets-provider passphrase --non-interactive "$STACK"
pulumi preview --stack "$STACK" --non-interactive --diff

render=$(pulumi config get gpu-node-pools:renderDir --stack "$STACK" 2>/dev/null || true)
if [ -n "$render" ]; then
	case "$render" in /*) ;; *) render="$PWD/$render" ;; esac
	# The render provider writes only what changed: when the directory is
	# gone, forget the last render so that up writes every object again.
	if [ ! -d "$render" ] && [ "$(pulumi stack --stack "$STACK" 2>/dev/null | grep -c 'resources')" -gt 0 ]; then
		pulumi destroy --stack "$STACK" --non-interactive --yes --skip-preview >/dev/null
	fi
	pulumi up --stack "$STACK" --non-interactive --yes --skip-preview
	echo
	echo "Rendered manifests of stack $STACK (apply or sync with a GitOps tool):"
	echo "  $render/workload    objects for the workload cluster"
	echo "  $render/management  Cluster API objects for the management cluster"
	secrets=$(pulumi stack output externalSecrets --stack "$STACK" 2>/dev/null || true)
	if [ -n "$secrets" ]; then
		echo "Secrets are not written to files; create these with your secret manager: $secrets"
	fi
fi
