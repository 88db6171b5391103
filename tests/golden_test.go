package tests

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/program"
)

// updateGolden rewrites the golden files: only for a deliberate change of
// what a stack registers, reviewed in the diff of testdata/golden.
var updateGolden = flag.Bool("update-golden", false, "rewrite tests/testdata/golden from the program")

// goldenResource is everything the engine is told about one resource.
type goldenResource struct {
	Type                string         `json:"type"`
	Name                string         `json:"name"`
	Parent              string         `json:"parent,omitempty"`
	Provider            string         `json:"provider,omitempty"`
	Protect             bool           `json:"protect,omitempty"`
	IgnoreChanges       []string       `json:"ignoreChanges,omitempty"`
	ReplaceOnChanges    []string       `json:"replaceOnChanges,omitempty"`
	DeleteBeforeReplace bool           `json:"deleteBeforeReplace,omitempty"`
	Inputs              map[string]any `json:"inputs"`
}

// The full set of resources each real stack registers (types, names,
// parents, providers, options and every input, secrets marked) is exactly
// the committed golden file: a refactor that changes what a stack would do
// fails here. Not parallel: it clears the chart directory variable, which
// would otherwise change the charts' sources.
func TestStacksMatchGolden(t *testing.T) {
	t.Setenv(plan.ChartDirEnv, "")
	for _, tc := range []struct {
		golden, stack string
		program       pulumi.RunFunc
	}{
		{"dev", "dev", program.Program},
		{"prod", "prod", program.Program},
		// the prod stack's Kubernetes side alone, as OpenWorkloadStack runs it
		{"prod-workload", "prod", program.WorkloadProgram(secret.Secret("apiVersion: v1\nkind: Config\n# workload\n"))},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			stack := tc.stack
			cfg, secrets, err := pulumitest.StackConfig(stack)
			if err != nil {
				t.Fatal(err)
			}
			m, err := pulumitest.Run(tc.program, "gpu-node-pools", stack, cfg, secrets)
			if err != nil {
				t.Fatal(err)
			}
			var got []goldenResource
			for _, r := range m.Resources() {
				got = append(got, goldenResource{
					Type: r.Type, Name: r.Name, Parent: r.Parent, Provider: r.Provider, Protect: r.Protect,
					IgnoreChanges: r.IgnoreChanges, ReplaceOnChanges: r.ReplaceOnChanges, DeleteBeforeReplace: r.DeleteBeforeReplace,
					Inputs: markSecrets(r.Inputs),
				})
			}
			b, err := json.MarshalIndent(got, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("testdata", "golden", tc.golden+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (go test ./tests -run TestStacksMatchGolden -update-golden writes it)", err)
			}
			var wantRes, gotRes []goldenResource
			if err := json.Unmarshal(want, &wantRes); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &gotRes); err != nil {
				t.Fatal(err)
			}
			if len(gotRes) < 20 {
				t.Fatalf("only %d resources registered for %s", len(gotRes), stack)
			}
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Errorf("Pulumi.%s.yaml registers other resources than %s (-golden +now):\n%s", stack, file, diff)
			}
		})
	}
}

// markSecrets is a resource's inputs as plain data, each secret value
// wrapped as {"secret": value} so that losing secrecy shows as a diff.
func markSecrets(m resource.PropertyMap) map[string]any {
	var wrap func(v resource.PropertyValue) (any, bool)
	wrap = func(v resource.PropertyValue) (any, bool) {
		if v.IsSecret() {
			return map[string]any{"secret": v.SecretValue().Element.MapRepl(nil, wrap)}, true
		}
		return nil, false
	}
	return m.MapRepl(nil, wrap)
}
