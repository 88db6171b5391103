#!/usr/bin/env bash
# make destroy: offboard one customer. stackctl destroy previews what goes,
# asks for the stack's name (YES=1: tooling that confirmed already),
# deletes protected resources (a prod stack's pools) only with
# UNPROTECT=1, then removes the stack, its state and its stack file; for a
# rendering stack it says what to delete from the GitOps repository.
set -euo pipefail
cd "$(dirname "$0")/.."

STACK="${STACK:-}"
if [ -z "$STACK" ] || [ ! -f "Pulumi.$STACK.yaml" ]; then
	echo "make destroy: STACK= names a stack file; stacks here: $(ls Pulumi.*.yaml | sed 's/Pulumi\.\(.*\)\.yaml/\1/' | tr '\n' ' ')" >&2
	exit 2
fi
eval "$(.ci/env.sh)"
if [ "$STACK" = dev ]; then
	export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE-gpu-node-pools-dev}"
fi
GOBIN="$PWD/.pulumi-state/bin" go install ./cmd/stackctl
exec .pulumi-state/bin/stackctl destroy -stack "$STACK" ${UNPROTECT:+-unprotect} ${YES:+-yes}
