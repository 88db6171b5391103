package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// make stack refuses answers that make an invalid stack, naming the key,
// and leaves no file behind; it never overwrites a stack file.
func TestNewRefusesWrongAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(cluster string) []string {
		return []string{"new", "-name", "acme", "-target", "natron", "-cluster", cluster, "-kubernetes-version", "v1.33.4",
			"-image-url", "https://images.example/u.qcow2", "-image-checksum", "https://images.example/u.qcow2.sha256sum"}
	}
	var out, errs bytes.Buffer
	if code := run(args("Acme_1"), dir, &out, &errs); code != 1 {
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
	if code := run(args("acme"), dir, &out, &errs); code != 0 {
		t.Fatalf("exit %d for valid answers: %s", code, errs.String())
	}
	if !strings.Contains(out.String(), "pulumi config set --secret --path gpu-node-pools:natron.kubeconfig --stack acme") {
		t.Errorf("the steps do not set the kubeconfig:\n%s", out.String())
	}
	errs.Reset()
	if code := run(args("acme"), dir, &out, &errs); code != 1 || !strings.Contains(errs.String(), "exists") {
		t.Errorf("a second make stack of the same name: exit %d, %q", code, errs.String())
	}
}
