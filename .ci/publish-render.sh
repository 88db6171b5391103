#!/usr/bin/env bash
# GitOps delivery after a stack's up: the complete render (layers, sync
# waves, kustomization.yaml) goes to the folder of the platform repository
# that the stack's Argo CD Applications or Flux Kustomizations sync, as a
# pull request there (README, "Delivering with Argo CD or Flux"). A stack
# without a gitops block has nothing to publish. GH_TOKEN may push branches
# and open pull requests in the platform repository; it reaches git through
# a credential helper for that repository's host alone, never in a URL,
# an argument or .git/config. GITOPS_HOSTS (the fleet's variable; default
# github.com) are the hosts a token may go to, whatever a stack file says.
# STACKCTL is the program's stackctl (default: go run).
#   .ci/publish-render.sh STACK
set -euo pipefail
STACK=$1
stackctl() { if [ -n "${STACKCTL:-}" ]; then "$STACKCTL" "$@"; else go run ./cmd/stackctl "$@"; fi; }
eval "$(stackctl gitops -stack "$STACK")"
if [ -z "$GITOPS_REPO" ]; then echo "stack $STACK has no gitops block: nothing to publish"; exit 0; fi
# https://host/owner/repo(.git) or ssh://git@host/owner/repo(.git): the
# token pushes over https
case "$GITOPS_REPO" in
https://* | ssh://*) ;;
*)
	echo "stack $STACK: gitops.repoURL $GITOPS_REPO is neither https:// nor ssh://: not publishing" >&2
	exit 1
	;;
esac
rest=${GITOPS_REPO#*://}
rest=${rest#*@}
hostport=${rest%%/*}
host=${hostport%%:*}
repo_path=${rest#*/}
if [ "${GITOPS_REPO%%://*}" = ssh ]; then hostport=$host; fi # ssh's port is not https's
allowed=0
for h in ${GITOPS_HOSTS:-github.com}; do
	if [ "$h" = "$host" ]; then allowed=1; fi
done
if [ "$allowed" != 1 ]; then
	echo "stack $STACK: the platform repository's host $host is not one of GITOPS_HOSTS (${GITOPS_HOSTS:-github.com}): the token does not go there" >&2
	exit 1
fi
url="https://$hostport/$repo_path"
# the helper reads the token from the environment when git asks, for this
# host's https URLs alone
helper='!f() { test "$1" = get && echo username=x-access-token && echo "password=$GH_TOKEN"; }; f'
export GIT_TERMINAL_PROMPT=0
stackctl render -stack "$STACK"
platform="${RUNNER_TEMP:-/tmp}/platform-$STACK"
rm -rf "$platform"
git -c credential.helper= -c "credential.https://$hostport.helper=$helper" \
	clone -q --depth 1 --branch "$GITOPS_REVISION" "$url" "$platform"
rm -rf "${platform:?}/$GITOPS_PATH"
mkdir -p "$platform/$GITOPS_PATH"
cp -R "$GITOPS_RENDER_DIR"/. "$platform/$GITOPS_PATH/"
# the stack's outputs (costs among them) stay with this run, not in the customer's repository
rm -f "$platform/$GITOPS_PATH/outputs.json"
cd "$platform"
git add -A "$GITOPS_PATH"
if git diff --cached --quiet; then echo "the platform repository already has this render"; exit 0; fi
branch="gpu-node-pools/$STACK-${GITHUB_SHA::12}"
git -c user.name=gpu-node-pools -c user.email=gpu-node-pools@users.noreply.github.com \
	commit -q -m "gpu-node-pools $STACK: render of ${GITHUB_REPOSITORY}@${GITHUB_SHA::12}"
git -c credential.helper= -c "credential.https://$hostport.helper=$helper" push -q origin "HEAD:refs/heads/$branch"
gh pr create --repo "$host/${repo_path%.git}" --base "$GITOPS_REVISION" --head "$branch" \
	--title "gpu-node-pools $STACK: render of ${GITHUB_SHA::12}" \
	--body "Rendered by ${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID} from ${GITHUB_SHA}. Merging it lets the GitOps tool sync ${GITOPS_PATH}."
