package tests

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// cnpgInstancePod is the pod CloudNativePG 1.30.0 makes for instance 1
// of a Cluster, as far as admission sees it. Its operator code cannot run
// here (v1.30.0 does not compile against k8s.io/api v0.37), so its rules
// are encoded from the tag:
//   - pkg/specs/pods.go createClusterPodSpec: the bootstrap-controller init
//     container and the postgres container, affinity from
//     spec.affinity.nodeAffinity (CreateAffinitySection), tolerations and
//     nodeSelector from spec.affinity;
//   - pkg/specs/pods.go:448 GetPodSecurityContext: runAsUser, runAsGroup
//     and fsGroup 26 (api/v1 DefaultPostgresUID/GID), runAsNonRoot,
//     the cluster's seccomp profile (RuntimeDefault: api/v1/cluster_funcs.go
//     GetSeccompProfile);
//   - pkg/specs/containers.go:64 GetSecurityContext: drop ALL, not
//     privileged, runAsNonRoot, read-only root, no privilege escalation.
//
// Resources come from spec.resources; the pod is owned by the Cluster.
func cnpgInstancePod(cluster map[string]any) map[string]any {
	spec := cluster["spec"].(map[string]any)
	name := helmtest.Get(cluster, "metadata", "name").(string)
	affinity, _ := spec["affinity"].(map[string]any)
	container := map[string]any{
		"capabilities": map[string]any{"drop": []any{"ALL"}}, "privileged": false, "runAsNonRoot": true,
		"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}
	pod := map[string]any{
		"securityContext": map[string]any{"runAsUser": 26, "runAsGroup": 26, "fsGroup": 26, "runAsNonRoot": true,
			"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		"initContainers": []any{map[string]any{"name": "bootstrap-controller", "image": "ghcr.io/cloudnative-pg/cloudnative-pg:1.30.0",
			"command": []any{"/manager", "bootstrap", "/controller/manager"}, "resources": spec["resources"], "securityContext": container}},
		"containers": []any{map[string]any{"name": "postgres", "image": spec["imageName"], "resources": spec["resources"], "securityContext": container}},
		"volumes": []any{
			map[string]any{"name": "pgdata", "persistentVolumeClaim": map[string]any{"claimName": name + "-1"}},
			map[string]any{"name": "scratch-data", "emptyDir": map[string]any{}},
		},
	}
	if na, ok := affinity["nodeAffinity"]; ok {
		pod["affinity"] = map[string]any{"nodeAffinity": na}
	}
	if ns, ok := affinity["nodeSelector"]; ok {
		pod["nodeSelector"] = ns
	}
	if tol, ok := affinity["tolerations"]; ok {
		pod["tolerations"] = tol
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name + "-1", "namespace": helmtest.Get(cluster, "metadata", "namespace"),
			"labels": map[string]any{"cnpg.io/cluster": name},
			"ownerReferences": []any{map[string]any{"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "name": name,
				"uid": "00000000-0000-0000-0000-000000000001", "controller": true}}},
		"spec": pod,
	}
}

// The vector databases' pods (the dev stack's pgvector instance as
// CloudNativePG makes it, a Qdrant StatefulSet from the real chart) meet
// Pod Security restricted and pass the stack's own policies in the real
// Kyverno engine; in their namespace a pod that requests a GPU, or only
// tolerates the GPU taint, is rejected, and one outside it is not judged
// by that policy.
func TestVectorDBPodsAndGPUs(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	m, _ := runStack(t, "dev")
	var policies, objects []map[string]any
	for _, r := range m.Resources() {
		switch r.Type {
		case "kubernetes:kyverno.io/v1:ClusterPolicy":
			policies = append(policies, plainInputs(r.Inputs))
		case "kubernetes:postgresql.cnpg.io/v1:Cluster":
			objects = append(objects, cnpgInstancePod(plainInputs(r.Inputs)))
		}
	}
	if len(objects) != 1 {
		t.Fatalf("the dev stack registers %d pgvector Clusters, want 1", len(objects))
	}
	q := vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "10Gi", Namespace: "vector-dbs"}.Defaults()
	for _, o := range helmtest.RenderRelease(t, charts, helm.Release{Name: vectordb.QdrantRelease(q.Name), Chart: vectordb.QdrantChart, Dir: charts,
		Values: vectordb.QdrantValues(q)}, q.Namespace) {
		if o["kind"] == "StatefulSet" {
			// as admission sees it: the API server drops the chart's
			// empty "initContainers:" (null), which the CLI would keep
			o = helmtest.WithoutNulls(o)
			o["metadata"].(map[string]any)["namespace"] = q.Namespace
			objects = append(objects, o)
		}
	}
	if len(objects) != 2 {
		t.Fatalf("no Qdrant StatefulSet rendered")
	}
	for _, o := range objects {
		spec := helmtest.Get(o, "spec").(map[string]any)
		if o["kind"] == "StatefulSet" {
			spec = helmtest.Get(o, "spec", "template", "spec").(map[string]any)
		}
		if v, err := podsecurity.Violations(podsecurity.Restricted, spec); err != nil || len(v) > 0 {
			t.Errorf("%s %s is not restricted: %v %v", o["kind"], helmtest.Get(o, "metadata", "name"), v, err)
		}
	}
	gpuPod := func(name, ns string, request, tolerate bool) map[string]any {
		c := map[string]any{"name": "app", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
			"resources": map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": map[string]any{"memory": "1Gi"}}}
		spec := map[string]any{"containers": []any{c}}
		if request {
			c["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"] = "1"
		}
		if tolerate {
			spec["tolerations"] = []any{map[string]any{"key": gpupool.GPUTaintKey, "operator": "Exists", "effect": "NoSchedule"}}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
	}
	objects = append(objects, gpuPod("embedder-on-gpu", "vector-dbs", true, true), gpuPod("tolerates-only", "vector-dbs", false, true),
		gpuPod("trainer", "batch", true, true))
	out := kyvernotest.Apply(t, policies, objects)
	rule := policy.CPUOnlyName + "/" + policy.RuleNoGPU
	want := map[string]string{
		"Pod/vector-dbs/rag-1": "pass", "StatefulSet/vector-dbs/qdrant-search": "pass",
		"Pod/vector-dbs/embedder-on-gpu": "fail", "Pod/vector-dbs/tolerates-only": "fail", "Pod/batch/trainer": "",
	}
	for res, verdict := range want {
		got := out.Verdicts[res][strings.ReplaceAll(rule, "/", "/"+map[bool]string{true: "autogen-", false: ""}[strings.HasPrefix(res, "StatefulSet")])]
		if got != verdict {
			t.Errorf("%s: %s is %q, want %q (verdicts %v)", res, rule, got, verdict, out.Verdicts[res])
		}
	}
	// the database pods pass every other policy of the stack too
	for _, res := range []string{"Pod/vector-dbs/rag-1", "StatefulSet/vector-dbs/qdrant-search"} {
		for r, v := range out.Verdicts[res] {
			if v != "pass" && v != "skip" {
				t.Errorf("%s: %s %s", res, r, v)
			}
		}
	}
}
