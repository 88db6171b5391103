package tests

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// No test makes by hand what an upstream component makes at run time:
// the simulated cluster's Create refuses such objects (kubeapi.MadeAtRunTime,
// checked here on each kind it must refuse and on what it must let
// through), and no test source makes them another way (a RuntimeClass
// literal, a client's Create of one, KEDA's certificate Secret) outside
// the stand-ins that own them.
func TestNoTestMakesWhatAnOperatorMakes(t *testing.T) {
	t.Parallel()
	p := stackPlan(t, "dev")
	gpuNode := nodesim.JoiningGPUNode(p.Pools[0], 0)
	advertised := nodesim.JoiningGPUNode(p.Pools[0], 1)
	advertised["status"].(map[string]any)["capacity"].(map[string]any)["nvidia.com/gpu"] = "8"
	labelled := nodesim.JoiningGPUNode(p.Pools[0], 2)
	labelled["metadata"].(map[string]any)["labels"].(map[string]any)["feature.node.kubernetes.io/pci-0302_10de.present"] = "true"
	deployLabel := nodesim.JoiningGPUNode(p.Pools[0], 3)
	deployLabel["metadata"].(map[string]any)["labels"].(map[string]any)["nvidia.com/gpu.deploy.device-plugin"] = "true"
	migGFD := nodesim.JoiningGPUNode(p.Pools[0], 4)
	migGFD["metadata"].(map[string]any)["labels"].(map[string]any)["nvidia.com/mig-3g.40gb.product"] = "NVIDIA-A100-SXM4-80GB-MIG-3g.40gb"
	migPool := nodesim.JoiningGPUNode(p.Pools[0], 5)
	migPool["metadata"].(map[string]any)["labels"].(map[string]any)[natron.LabelMIGConfig] = "all-3g.40gb"
	for _, tc := range []struct {
		name   string
		obj    map[string]any
		refuse bool
	}{
		{"runtime class", map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}}, true},
		{"GPU node with GPUs advertised", advertised, true},
		{"GPU node with NFD's labels", labelled, true},
		{"GPU node with the operator's labels", deployLabel, true},
		{"GPU node with GPU feature discovery's MIG labels", migGFD, true},
		{"bare-metal MIG pool node asking for its layout", migPool, false},
		{"endpoint slice", map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": map[string]any{"name": "x"}}, true},
		{"KEDA's certificates", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "kedaorg-certs"}}, true},
		{"joining GPU node", gpuNode, false},
		{"CPU node", nodesim.CPUNode("platform-0", 16, 64), false},
		{"autoscaler template node", nodesim.AKSTemplateNode("gpu", p.Pools[0].SKU, nil, nil, "template"), false},
		{"a Secret of the stack", map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "rag-credentials"}}, false},
	} {
		if got := kubeapi.MadeAtRunTime(tc.obj) != ""; got != tc.refuse {
			t.Errorf("%s: refused %v, want %v (%s)", tc.name, got, tc.refuse, kubeapi.MadeAtRunTime(tc.obj))
		}
	}

	// Other ways of making them, in the test sources: a RuntimeClass as a
	// manifest or a typed object, KEDA's certificate Secret by name.
	made := regexp.MustCompile(`"kind":\s*"RuntimeClass"|nodev1\.RuntimeClass\{|RuntimeClasses\(\)\.Create|"kedaorg-certs"`)
	owners := map[string]bool{ // the stand-ins, and this test
		"internal/testkit/gpustack/gpustack.go": true, "internal/testkit/delivery/runtime.go": true,
		"internal/testkit/kubeapi/runtime.go": true, "tests/standins_test.go": true,
	}
	root := ".."
	found := 0
	for _, dir := range []string{"tests", "internal", "components", "stacks", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			test := strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, "internal/testkit/")
			if !test || owners[filepath.ToSlash(rel)] {
				return nil
			}
			found++
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, line := range strings.Split(string(b), "\n") {
				if made.MatchString(line) {
					t.Errorf("%s:%d makes what an upstream component makes at run time: %s", rel, i+1, strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 50 {
		t.Fatalf("read %d test sources: the walk misses them", found)
	}
}
