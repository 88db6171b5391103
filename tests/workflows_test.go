package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

// The workflows that preview and apply AKS stacks can reach an Entra ID
// cluster unattended: they sign in to Azure and install kubelogin, which
// the converted kubeconfig runs (aks.login), and they install the one
// azure-native plugin every Azure resource of a stack is pinned to, and
// the random plugin for a generated API key; both check the stack first.
func TestWorkflowsReachEntraClusters(t *testing.T) {
	t.Parallel()
	for _, wf := range []string{"preview.yml", "up.yml"} {
		b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", wf))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{
			"uses: azure/login@v2",
			"uses: azure/use-kubelogin@v1",
			"pulumi plugin install resource azure-native " + aks.AzureNativeVersion,
			"pulumi plugin install resource random " + preflight.RandomVersion,
			"go run ./cmd/stackctl check -stack",
			"run: .ci/env.sh --github",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("%s lacks %q", wf, want)
			}
		}
	}
}

// Both workflows take their stacks from the stack files (stackctl stacks),
// not from a list to keep up to date, and a merge publishes each GitOps
// stack's complete render to the platform repository.
func TestWorkflowsCoverEveryStackAndPublish(t *testing.T) {
	t.Parallel()
	for _, wf := range []string{"preview.yml", "up.yml"} {
		b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", wf))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for _, want := range []string{"go run ./cmd/stackctl stacks", "stack: ${{ fromJSON(needs.stacks.outputs.list) }}"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s lacks %q", wf, want)
			}
		}
		if strings.Contains(s, "stack: [") {
			t.Errorf("%s lists its stacks by hand", wf)
		}
		if wf != "up.yml" {
			continue
		}
		for _, want := range []string{`eval "$(go run ./cmd/stackctl gitops -stack "$STACK")"`, `go run ./cmd/stackctl render -stack "$STACK"`,
			`cp -R "$GITOPS_RENDER_DIR"/. "$platform/$GITOPS_PATH/"`, "gh pr create"} {
			if !strings.Contains(s, want) {
				t.Errorf("up.yml does not publish the render: lacks %q", want)
			}
		}
	}
}
