package tests

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// podKinds are the kinds Kyverno's pod policies (and their autogen rules)
// look at.
var podKinds = []string{"Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob"}

// The program's own workloads, exactly as it registers them for each real
// stack (its charts rendered from the real archives with the values it
// passes), pass the ClusterPolicies it installs, in the real Kyverno
// engine: the policies never lock out the platform, the model servers or
// the batch jobs.
func TestOwnWorkloadsPassTheirPolicies(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			m, _ := runStack(t, stack)
			var policies, workloads []map[string]any
			for _, r := range m.Resources() {
				switch {
				case r.Type == "kubernetes:kyverno.io/v1:ClusterPolicy":
					policies = append(policies, plainInputs(r.Inputs))
				case r.Type == chartType:
					workloads = append(workloads, renderRegistered(t, charts, r)...)
				case slices.Contains(podKinds, r.Type[strings.LastIndex(r.Type, ":")+1:]):
					workloads = append(workloads, plainInputs(r.Inputs))
				}
			}
			if len(policies) != 5 {
				t.Fatalf("%d ClusterPolicies registered, want 5", len(policies))
			}
			kinds := map[string]int{}
			for _, w := range workloads {
				kinds[w["kind"].(string)]++
			}
			// the GPU layer's DaemonSets or operator, a model server, its
			// download Job, the batch CronJob
			for _, k := range []string{"Deployment", "Job", "CronJob"} {
				if kinds[k] == 0 {
					t.Fatalf("no %s among the workloads %v", k, kinds)
				}
			}
			out := kyvernotest.Apply(t, policies, workloads)
			t.Logf("%s: %d workloads %v, %d with verdicts", stack, len(workloads), kinds, len(out.Verdicts))
			if f := out.Verdicts.Failures(); len(f) > 0 {
				t.Errorf("the program's own workloads fail its policies:\n%s", strings.Join(f, "\n"))
			}
			// The GPU rules did look at the model server.
			evaluated := 0
			for res, rules := range out.Verdicts {
				if strings.HasPrefix(res, "Deployment/models/") && rules[policy.RequireResourcesName+"/autogen-"+policy.RuleDeclareResources] == "pass" {
					evaluated++
				}
			}
			if evaluated == 0 {
				t.Errorf("no model server Deployment was checked for resources; verdicts: %v", out.Verdicts)
			}
		})
	}
}

// renderRegistered renders a registered helm Chart resource from the local
// archive with its registered values and namespace, keeping the pod kinds.
func renderRegistered(t *testing.T, charts string, r pulumitest.Resource) []map[string]any {
	t.Helper()
	in := plainInputs(r.Inputs)
	chart, _ := in["chart"].(string)
	if !strings.HasSuffix(chart, ".tgz") {
		version, _ := in["version"].(string)
		chart = filepath.Join(charts, chart+"-"+version+".tgz")
	}
	ns, _ := in["namespace"].(string)
	release, _ := in["name"].(string)
	if release == "" {
		release = r.Name
	}
	values, _ := in["values"].(map[string]any)
	var out []map[string]any
	for _, o := range helmtest.RenderChart(t, chart, release, ns, values, false) {
		if !slices.Contains(podKinds, o["kind"].(string)) {
			continue
		}
		meta := o["metadata"].(map[string]any)
		if meta["namespace"] == nil {
			meta["namespace"] = ns // as the provider applies it
		}
		out = append(out, o)
	}
	return out
}

// plainInputs are a resource's inputs as plain data, secrets unwrapped.
func plainInputs(m resource.PropertyMap) map[string]any {
	var unwrap func(v resource.PropertyValue) (any, bool)
	unwrap = func(v resource.PropertyValue) (any, bool) {
		if v.IsSecret() {
			return v.SecretValue().Element.MapRepl(nil, unwrap), true
		}
		return nil, false
	}
	return m.MapRepl(nil, unwrap)
}
