package stackfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key set twice is refused with both lines: a pasted second config:
// header, a second serving: block, a model's key given twice. Keys
// repeated in different maps or list items are fine.
func TestDuplicateKeysAreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"one of each", "config:\n  gpu-node-pools:target: aks\n  gpu-node-pools:pools:\n    - name: a\n    - name: b\n", nil},
		{"a pasted config header", "config:\n  gpu-node-pools:target: aks\nconfig:\n  gpu-node-pools:models: []\n",
			[]string{"key config is set twice, on lines 1 and 3"}},
		{"a second serving block", "config:\n  gpu-node-pools:serving:\n    apiKey: x\n  gpu-node-pools:serving:\n    downloadCIDRs: [10.0.0.0/8]\n",
			[]string{"key config.gpu-node-pools:serving is set twice, on lines 2 and 4"}},
		{"a key twice in a list item", "config:\n  gpu-node-pools:models:\n    - name: a\n      pool: x\n      pool: y\n",
			[]string{"key config.gpu-node-pools:models.[0].pool is set twice, on lines 4 and 5"}},
	} {
		got, err := duplicateKeys([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%s: got %q, want %q", tc.name, got[i], tc.want[i])
			}
		}
	}
}

// Read refuses such a file before it reads a value, naming the file.
func TestReadRefusesDuplicateKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("Pulumi.yaml", "name: gpu-node-pools\nruntime: go\n")
	write("Pulumi.beta.yaml", "config:\n  gpu-node-pools:target: natron\nconfig:\n  gpu-node-pools:models: []\n")
	_, err := Read(dir, "beta", "secret")
	if err == nil || !strings.Contains(err.Error(), "Pulumi.beta.yaml: key config is set twice, on lines 1 and 3") {
		t.Fatalf("got %v", err)
	}
}
