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

eval "$(.ci/env.sh)"
# The documented development passphrase is the dev stack's only: any other
# stack needs its own (or a KMS secrets provider), which stackctl check
# demands before the stack is created.
if [ "$STACK" = dev ]; then
	export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE-gpu-node-pools-dev}"
fi
if [ -n "${GPU_NODE_POOLS_CHART_DIR:-}" ]; then echo "charts from $GPU_NODE_POOLS_CHART_DIR"; fi

# The checker, installed once per change (go install relinks nothing when
# nothing changed). It builds every package of the program, so a first
# build names each one here; the program itself is installed by
# .ci/program.sh when the engine runs it (a rendering stack runs inline in
# stackctl and needs no program binary).
GOBIN="$PWD/.pulumi-state/bin" go install -v ./cmd/stackctl 2>&1 |
	awk 'NR == 1 { print "compiling the program (a first build takes a few minutes):" } { print "  " $0; fflush() }'

# Config, secrets and plugins, checked before the stack is selected or
# created: an invalid stack is never created, and what to fix comes first.
.pulumi-state/bin/stackctl check -stack "$STACK"

if ! out=$(pulumi stack select --create --secrets-provider passphrase --non-interactive "$STACK" 2>&1); then
	echo "$out" >&2
	if grep -q "incorrect passphrase" <<<"$out"; then
		echo "hint: Pulumi.$STACK.yaml holds an encryptionsalt (and secure values) made with another passphrase: a file copied from another stack, or PULUMI_CONFIG_PASSPHRASE is not this stack's. For a new stack, remove the encryptionsalt line and every secure value, then set the secrets again (make stack prints the commands)." >&2
	fi
	exit 1
fi

render=$(pulumi config get gpu-node-pools:renderDir --stack "$STACK" 2>/dev/null || true)
if [ -z "$render" ]; then
	# The property diff (thousands of lines of CRD schemas) only on
	# request: DIFF=1. Otherwise one line per resource and the summary.
	pulumi preview --stack "$STACK" --non-interactive --suppress-outputs ${DIFF:+--diff}
else
	# A stack that renders: the complete tree of the current config, in one
	# engine run (automation.Render, also what tooling calls).
	.pulumi-state/bin/stackctl render -stack "$STACK"
fi
