#!/usr/bin/env bash
# The environment make preview runs the Pulumi CLI with, as export lines:
# the pinned toolchain first on PATH, the file backend and PULUMI_HOME inside
# the checkout, no plugin downloads, and the shared chart archives when there
# are some. `eval "$(make -s env)"` gives a shell the same, for pulumi
# commands outside make (pulumi stack init, pulumi config set --secret).
# With --github, a workflow step gets the same: the PATH entry goes to
# $GITHUB_PATH, the settings to $GITHUB_ENV (the backend URL stays the
# workflow's own secret).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(.ci/toolchain/install.sh | tail -n 1)
state="$PWD/.pulumi-state"
home="${PULUMI_HOME:-$state/home}"
mkdir -p "$state/backend" "$state/bin"
# The CLI and Go language host on PATH; the Kubernetes provider installed
# as a plugin in PULUMI_HOME (a link to the built one, not a 440 MB copy),
# so the engine does not warn about a provider taken from $PATH.
for b in pulumi pulumi-language-go; do ln -sf "$bin/$b" "$state/bin/$b"; done
k8s=$(sed -n 's#^[[:space:]]*github.com/pulumi/pulumi-kubernetes/sdk/v4 v\([0-9.]*\).*#\1#p' go.mod)
plugin="$home/plugins/resource-kubernetes-v$k8s"
if [ ! -e "$plugin/pulumi-resource-kubernetes" ]; then
	mkdir -p "$plugin" && ln -sf "$bin/pulumi-resource-kubernetes" "$plugin/pulumi-resource-kubernetes" && touch "$plugin.lock"
fi
if [ "${1:-}" = --github ]; then
	echo "$state/bin" >>"$GITHUB_PATH"
	{
		echo "PULUMI_HOME=$home"
		echo "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true"
		echo "PULUMI_SKIP_UPDATE_CHECK=true"
	} >>"$GITHUB_ENV"
	exit 0
fi
echo "export PATH=\"$state/bin:\$PATH\""
echo "export PULUMI_BACKEND_URL=\"${PULUMI_BACKEND_URL:-file://$state/backend}\""
echo "export PULUMI_HOME=\"$home\""
echo "export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true PULUMI_SKIP_UPDATE_CHECK=true"
# Charts come from local archives when there are some (offline machines,
# tests); otherwise from the upstream Helm repositories.
shared="${GPU_NODE_POOLS_SHARED:-../shared}"
if [ -n "${GPU_NODE_POOLS_CHART_DIR:-}" ]; then
	echo "export GPU_NODE_POOLS_CHART_DIR=\"$GPU_NODE_POOLS_CHART_DIR\""
elif [ -d "$shared/charts" ]; then
	echo "export GPU_NODE_POOLS_CHART_DIR=\"$(cd "$shared/charts" && pwd)\""
fi
