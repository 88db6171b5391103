package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
)

// make stack refuses answers that make an invalid stack, naming the key,
// and leaves no file behind; it never overwrites a stack file.
func TestNewRefusesWrongAnswers(t *testing.T) {
	t.Parallel()
	dir := stacktest.Project(t, nil)
	args := func(cluster string) []string {
		return []string{"new", "-name", "acme", "-target", "natron", "-cluster", cluster, "-kubernetes-version", "v1.33.4",
			"-image-url", "https://images.example/u.qcow2", "-image-checksum", "https://images.example/u.qcow2.sha256sum"}
	}
	var out, errs bytes.Buffer
	if code := run(args("Acme_1"), dir, nil, &out, &errs); code != 1 {
		t.Fatalf("exit %d for an invalid cluster name; stderr %q", code, errs.String())
	}
	if want := `gpu-node-pools:natron.clusterName: must be a DNS label`; !strings.Contains(errs.String(), want) {
		t.Errorf("stderr %q lacks %q", errs.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "Pulumi.acme.yaml")); !os.IsNotExist(err) {
		t.Errorf("an invalid stack file was left behind: %v", err)
	}
	out.Reset()
	errs.Reset()
	if code := run(args("acme"), dir, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d for valid answers: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "pulumi config set --secret --path gpu-node-pools:natron.kubeconfig --stack acme") {
		t.Errorf("the steps do not set the kubeconfig:\n%s", out.String())
	}
	errs.Reset()
	if code := run(args("acme"), dir, nil, &out, &errs); code != 1 || !strings.Contains(errs.String(), "exists") {
		t.Errorf("a second make stack of the same name: exit %d, %q", code, errs.String())
	}
}

// stackctl cost: the PR comment's cost table, the change against the base
// branch pool by pool and in total; a stack the base lacks counts as 0.
func TestCostChange(t *testing.T) {
	t.Parallel()
	root := pulumitest.RepoRoot()
	head, base := t.TempDir(), t.TempDir()
	for _, d := range []string{head, base} {
		b, err := os.ReadFile(filepath.Join(root, "Pulumi.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "Pulumi.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prod, err := os.ReadFile(filepath.Join(root, "Pulumi.prod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// the change under review: the H100 pool may grow to 2 nodes, from 1,
	// and the 70B model to 4 replicas, from 2
	older := strings.Replace(string(prod), "sku: Standard_ND96isr_H100_v5\n      minNodes: 0\n      maxNodes: 2", "sku: Standard_ND96isr_H100_v5\n      minNodes: 0\n      maxNodes: 1", 1)
	older = strings.Replace(older, "maxReplicas: 4\n      queueDepthTarget: 3", "maxReplicas: 2\n      queueDepthTarget: 3", 1)
	if older == string(prod) || !strings.Contains(older, "maxReplicas: 2") {
		t.Fatal("the prod stack's H100 pool changed shape: update the test")
	}
	if err := os.WriteFile(filepath.Join(head, "Pulumi.prod.yaml"), prod, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "Pulumi.prod.yaml"), []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"cost", "-stack", "prod", "-base", base}, head, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, want := range []string{
		"| h100x8 | 71774 → 143547 | 71774 → 71774 | USD |  |",
		"| a100 | 10725 → 10725 | 0 → 0 | USD |  |",
		"| h100spot | 40763 → 40763 | 0 → 0 | USD |  |", // eastus spot as the sourced data gives it
		"| **total** | 171106 → 242880 (+71774) | 71774 → 71774 (+0) | | |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"cost", "-stack", "prod", "-base", t.TempDir()}, head, nil, &out, &errs); code != 0 ||
		!strings.Contains(out.String(), "The base branch has no stack prod: its cost counts as 0.") ||
		!strings.Contains(out.String(), "(+242880)") {
		t.Errorf("a new stack: exit %d\n%s", code, out.String())
	}
}

// The workflows' stack list is the stack files; the publish step's
// variables come from the stack's gitops block, empty without one.
func TestStacksAndGitOpsTarget(t *testing.T) {
	t.Parallel()
	root := pulumitest.RepoRoot()
	var out, errs bytes.Buffer
	if code := run([]string{"stacks"}, root, nil, &out, &errs); code != 0 || strings.TrimSpace(out.String()) != `["dev","prod"]` {
		t.Errorf("stacks: %d %q %s", code, out.String(), errs.String())
	}
	for stack, want := range map[string][]string{
		"dev":  {"GITOPS_PATH='clusters/acme/gpu'", "GITOPS_RENDER_DIR='rendered'", "GITOPS_REPO='https://git.natron-cloud.example/platform/acme-cluster.git'", "GITOPS_REVISION='main'"},
		"prod": {"GITOPS_PATH=''", "GITOPS_RENDER_DIR=''", "GITOPS_REPO=''", "GITOPS_REVISION=''"},
	} {
		out.Reset()
		if code := run([]string{"gitops", "-stack", stack}, root, nil, &out, &errs); code != 0 {
			t.Fatalf("gitops %s: %s", stack, errs.String())
		}
		if got := strings.Fields(out.String()); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("gitops %s: %q, want %q", stack, got, want)
		}
	}
}

// A wrong answer is reported against the make variable typed, and an
// answer that looks like a number (K8S_VERSION=1.33) stays the string
// typed, so the real problem shows in the same round as the others.
func TestNewNamesTheMakeVariable(t *testing.T) {
	t.Parallel()
	dir := stacktest.Project(t, nil)
	var out, errs bytes.Buffer
	code := run([]string{"new", "-name", "acme", "-target", "natron", "-cluster", "Acme_1", "-kubernetes-version", "1.33",
		"-image-url", "https://images.example/u.qcow2", "-image-checksum", "https://images.example/u.qcow2.sha256sum"}, dir, nil, &out, &errs)
	if code != 1 {
		t.Fatalf("exit %d; stderr %q", code, errs.String())
	}
	for _, want := range []string{
		`K8S_VERSION (-kubernetes-version, the stack's gpu-node-pools:natron.kubernetesVersion): must be a Kubernetes version such as v1.33.4, got "1.33"`,
		`gpu-node-pools:natron.clusterName: must be a DNS label`, // the same round
	} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs.String())
		}
	}
	if strings.Contains(errs.String(), "JSON number") {
		t.Errorf("the answer was read as a number:\n%s", errs.String())
	}
}

// Secrets created by hand are listed with their type, the keys whose
// values only the secret manager holds, and the values that are not
// secret as they must be; with a store, only the store entry and its keys.
func TestPrintRenderListsWhatToCreate(t *testing.T) {
	storage := map[string]any{"namespace": "models", "name": "gpu-node-pools-storage", "keys": []any{"RCLONE_CONFIG_SRC_KEY"},
		"values": map[string]any{"RCLONE_CONFIG_SRC_TYPE": "azureblob", "RCLONE_CONFIG_SRC_ACCOUNT": "acme"}}
	creds := map[string]any{"namespace": "rag", "name": "rag-credentials", "type": "kubernetes.io/basic-auth", "keys": []any{"password"},
		"values": map[string]any{"username": "app"}}
	tests := []struct {
		name string
		r    automation.Rendered
		want []string
	}{
		{"by hand", automation.Rendered{Dir: "/r", Changed: []string{"workload/a.yaml"}, Files: 3, ExternalSecrets: []any{storage, creds}}, []string{
			" ~  workload/a.yaml changed\n",
			"Rendered stack acme into /r: 0 added, 1 changed, 0 removed (2 objects in 3 files;",
			"create these with your secret manager",
			"  models/gpu-node-pools-storage  secret keys: [RCLONE_CONFIG_SRC_KEY]  values: RCLONE_CONFIG_SRC_ACCOUNT=acme RCLONE_CONFIG_SRC_TYPE=azureblob\n",
			"  rag/rag-credentials (type kubernetes.io/basic-auth)  secret keys: [password]  values: username=app\n"}},
		{"from a store", automation.Rendered{Dir: "/r", Files: 3, ExternalSecrets: []any{map[string]any{"store": "ClusterSecretStore vault",
			"storeKey": "acme/models/gpu-node-pools-storage", "keys": []any{"RCLONE_CONFIG_SRC_KEY"}, "values": storage["values"]}}}, []string{
			"unchanged since the last render",
			"Secrets come from ClusterSecretStore vault",
			"  acme/models/gpu-node-pools-storage  keys: [RCLONE_CONFIG_SRC_KEY]\n"}},
	}
	for _, tt := range tests {
		var out strings.Builder
		printRender(&out, "acme", 2, &tt.r)
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: no %q in\n%s", tt.name, w, out.String())
			}
		}
		if tt.name == "from a store" && strings.Contains(out.String(), "RCLONE_CONFIG_SRC_TYPE") {
			t.Errorf("a value the render writes is asked of the store:\n%s", out.String())
		}
	}
}
