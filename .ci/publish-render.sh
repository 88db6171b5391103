#!/usr/bin/env bash
# GitOps delivery after a stack's up: the complete render (layers, sync
# waves, kustomization.yaml) goes to the folder of the platform repository
# that the stack's Argo CD Applications or Flux Kustomizations sync, as a
# pull request there (README, "Delivering with Argo CD or Flux"). A stack
# without a gitops block has nothing to publish. GH_TOKEN may push branches
# and open pull requests in the platform repository; STACKCTL is the
# program's stackctl (default: go run).
#   .ci/publish-render.sh STACK
set -euo pipefail
STACK=$1
stackctl() { if [ -n "${STACKCTL:-}" ]; then "$STACKCTL" "$@"; else go run ./cmd/stackctl "$@"; fi; }
eval "$(stackctl gitops -stack "$STACK")"
if [ -z "$GITOPS_REPO" ]; then echo "stack $STACK has no gitops block: nothing to publish"; exit 0; fi
stackctl render -stack "$STACK"
platform="${RUNNER_TEMP:-/tmp}/platform-$STACK"
rm -rf "$platform"
git clone --depth 1 --branch "$GITOPS_REVISION" "https://x-access-token:${GH_TOKEN}@${GITOPS_REPO#https://}" "$platform"
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
git push -q origin "HEAD:refs/heads/$branch"
repo="${GITOPS_REPO#https://}"
gh pr create --repo "${repo%.git}" --base "$GITOPS_REVISION" --head "$branch" \
	--title "gpu-node-pools $STACK: render of ${GITHUB_SHA::12}" \
	--body "Rendered by ${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID} from ${GITHUB_SHA}. Merging it lets the GitOps tool sync ${GITOPS_PATH}."
