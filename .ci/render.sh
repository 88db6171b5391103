#!/usr/bin/env bash
# Render a stack with renderDir: every Kubernetes object of the current
# config as YAML, the complete tree, whatever any earlier render or state
# says. The render runs against a throwaway backend, so the engine writes
# every object (a kept state would write only what it thinks changed, and
# nothing once the directory was deleted), into a fresh directory that
# replaces the old one only when the render succeeded: no stale file of a
# removed pool or model survives, and a failed render leaves the last one.
# What changed against the last render is listed (DIFF=1: in full).
# Needs the environment of .ci/env.sh and the stack's passphrase.
set -euo pipefail
STACK="$1" render="$2"
case "$render" in /*) ;; *) render="$PWD/$render" ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PULUMI_BACKEND_URL="file://$tmp/backend"
mkdir -p "$tmp/backend"
pulumi stack init "$STACK" --secrets-provider passphrase --non-interactive >/dev/null

previous=""
if [ -d "$render" ]; then
	previous="$tmp/previous"
	mv "$render" "$previous"
fi
restore() {
	rm -rf "$render"
	if [ -n "$previous" ]; then mv "$previous" "$render"; fi
}
log="$tmp/up.log"
if ! pulumi up --stack "$STACK" --non-interactive --yes --skip-preview --suppress-outputs >"$log" 2>&1; then
	cat "$log" >&2
	restore
	echo "render of stack $STACK failed: the last render is left in $render" >&2
	exit 1
fi
# one line per object written, and the summary
grep -E '^ [-+~]+ .* (created|updated|deleted|replaced) \(' "$log" | sed -E 's/ \([0-9.]+s\).*//' || true
sed -n '/^Resources:/,/^Duration/p' "$log"
echo
if [ -n "$previous" ]; then
	if changes=$(diff -rq "$previous" "$render" 2>&1); then
		echo "Rendered manifests of stack $STACK, unchanged since the last render:"
	else
		echo "Changed since the last render:"
		sed -e "s#$previous#(last)#g" -e "s#$render#$(basename "$render")#g" <<<"$changes" | sed 's/^/  /'
		if [ -n "${DIFF:-}" ]; then diff -ru "$previous" "$render" || true; fi
		echo "Rendered manifests of stack $STACK (apply or sync with a GitOps tool):"
	fi
else
	echo "Rendered manifests of stack $STACK (apply or sync with a GitOps tool):"
fi
echo "  $render/workload    objects for the workload cluster"
echo "  $render/management  Cluster API objects for the management cluster"
secrets=$(pulumi stack output externalSecrets --stack "$STACK" 2>/dev/null || true)
if [ -n "$secrets" ] && [ "$secrets" != "[]" ]; then
	echo "Secrets are not written to files; create these with your secret manager: $secrets"
fi
