package scaffold_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/scaffold"
)

// Every scaffolded stack is valid as the program reads it, once the
// secrets it names are set: nothing else is left to fix.
func TestScaffoldedStacksLoad(t *testing.T) {
	t.Parallel()
	natron := scaffold.Options{Name: "acme", Target: "natron", Cluster: "acme", Answers: map[string]string{"kubernetes-version": "v1.33.4",
		"image-url": "https://images.example/u.qcow2", "image-checksum": "https://images.example/u.qcow2.sha256sum"}}
	rendered := natron
	rendered.RenderDir = "rendered"
	aks := scaffold.Options{Name: "contoso-prod", Target: "aks", Cluster: "aks-contoso", Answers: map[string]string{"resource-group": "rg-contoso"}}
	renderedAKS := aks
	renderedAKS.RenderDir = "rendered-contoso"
	for _, o := range []scaffold.Options{natron, rendered, aks, renderedAKS} {
		t.Run(o.Target+"/"+o.RenderDir, func(t *testing.T) {
			if p := o.Problems(); len(p) > 0 {
				t.Fatal(p)
			}
			dir := t.TempDir()
			b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "Pulumi.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			text, err := scaffold.File(o)
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{"Pulumi.yaml": string(b), "Pulumi." + o.Name + ".yaml": text} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := preflight.Stack(dir, o.Name, func(string, string) bool { return true })
			var problems []string
			for _, e := range r.Errors {
				for _, line := range strings.Split(e, "\n")[1:] {
					problems = append(problems, strings.TrimSpace(line))
				}
			}
			if len(problems) != len(scaffold.Secrets(o)) {
				t.Fatalf("problems %q, want only the secrets %q\n%s", problems, scaffold.Secrets(o), text)
			}
			for i, s := range scaffold.Secrets(o) {
				if !strings.HasPrefix(problems[i], s+": required") {
					t.Errorf("problem %q, want %s required", problems[i], s)
				}
			}
			steps := strings.Join(scaffold.NextSteps(o), "\n")
			for _, s := range scaffold.Secrets(o) {
				if !strings.Contains(steps, "pulumi config set --secret --path "+s+" --stack "+o.Name) {
					t.Errorf("no command sets %s:\n%s", s, steps)
				}
			}
		})
	}
}

func TestScaffoldProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		o    scaffold.Options
		want string
	}{
		{scaffold.Options{Name: "acme", Target: "gke"}, `TARGET "gke": aks or natron`},
		{scaffold.Options{Name: "a b", Target: "aks", Cluster: "c", Answers: map[string]string{"resource-group": "rg"}}, `NAME "a b": a stack name is`},
		{scaffold.Options{Name: "acme", Target: "aks", Cluster: "c"}, "RESOURCE_GROUP: required for target aks"},
		{scaffold.Options{Name: "acme", Target: "aks", Answers: map[string]string{"resource-group": "rg"}}, "CLUSTER: required for target aks"},
		{scaffold.Options{Name: "acme", Target: "natron", Cluster: "c", Answers: map[string]string{"kubernetes-version": "v1.33.4", "image-url": "u"}}, "IMAGE_CHECKSUM: required for target natron"},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.o.Problems(), "; "); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: problems %q, want %q", tt.o, got, tt.want)
		}
	}
}
