package pulumitest

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// WriteManifests writes objects to path as one multi-document YAML file,
// the form kubectl and the Kyverno CLI read.
func WriteManifests(t testing.TB, path string, objs []map[string]any) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}
