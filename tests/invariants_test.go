package tests

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// layered is an object of a rendered tree with the index of its layer.
type layered struct {
	o     *unstructured.Unstructured
	layer int
}

// treeObjects are the objects of a render's trees, each with its layer.
func treeObjects(t *testing.T, dir string) []layered {
	t.Helper()
	var out []layered
	for _, tree := range []string{gitops.WorkloadTree, gitops.ManagementTree} {
		for i, l := range gitops.Layers {
			path := filepath.Join(dir, tree, l.Dir)
			if _, err := os.Stat(path); err != nil {
				continue
			}
			objs, err := delivery.Build(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, o := range objs {
				out = append(out, layered{o, i})
			}
		}
	}
	return out
}

// podSpecOf is the pod spec an object runs, if it runs pods.
func podSpecOf(o *unstructured.Unstructured) (*corev1.PodSpec, map[string]string, bool) {
	tmpl, ok := gitops.PodTemplate(o.Object)
	if !ok || tmpl == nil {
		return nil, nil, false
	}
	raw, _, _ := unstructured.NestedMap(tmpl, "spec")
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil, nil, false
	}
	return &spec, labels, true
}

// inputsBeforePods: every Secret and ConfigMap a pod of the render reads
// (the kubelet's rule, kubeapi.MissingInputs) is in the pod's layer or an
// earlier one, as the object itself or made at run time by an operator of
// the render (delivery.KEDACerts), or is the target of an ExternalSecret
// of an earlier layer (the operator makes it after the ExternalSecret is
// applied, so a reader of the same layer would start without it). A
// Secret the platform provides (a pull secret, the host's own) would be
// named here; today there is none.
func inputsBeforePods(objs []layered) []string {
	type input struct {
		layer int
		keys  map[string]bool // nil: any key
		// synced: an ExternalSecret's target, which exists only once the
		// External Secrets Operator has read the store; a reader in the
		// same layer is applied before it is there
		synced bool
	}
	have := map[string]input{}
	add := func(kind, ns, name string, layer int, keys map[string]bool, synced bool) {
		k := kind + "/" + ns + "/" + name
		if prev, ok := have[k]; !ok || layer < prev.layer {
			have[k] = input{layer, keys, synced}
		}
	}
	for _, lo := range objs {
		o := lo.o
		switch o.GetKind() {
		case "Secret", "ConfigMap":
			keys := map[string]bool{}
			for _, field := range []string{"data", "stringData", "binaryData"} {
				m, _, _ := unstructured.NestedMap(o.Object, field)
				for k := range m {
					keys[k] = true
				}
			}
			add(o.GetKind(), o.GetNamespace(), o.GetName(), lo.layer, keys, false)
		case "ExternalSecret":
			name, _, _ := unstructured.NestedString(o.Object, "spec", "target", "name")
			if name == "" {
				name = o.GetName()
			}
			var keys map[string]bool // dataFrom or a template: any key
			if _, from, _ := unstructured.NestedSlice(o.Object, "spec", "dataFrom"); !from {
				if _, tmpl, _ := unstructured.NestedMap(o.Object, "spec", "target", "template"); !tmpl {
					keys = map[string]bool{}
					data, _, _ := unstructured.NestedSlice(o.Object, "spec", "data")
					for _, d := range data {
						if k, ok := d.(map[string]any)["secretKey"].(string); ok {
							keys[k] = true
						}
					}
				}
			}
			add("Secret", o.GetNamespace(), name, lo.layer, keys, true)
		case "Deployment":
			for _, s := range []delivery.RuntimeSecret{delivery.KEDACerts} {
				if o.GetName() == s.Operator {
					keys := map[string]bool{}
					for _, k := range s.Keys {
						keys[k] = true
					}
					add("Secret", o.GetNamespace(), s.Name, lo.layer, keys, false)
				}
			}
		}
	}
	var problems []string
	for _, lo := range objs {
		spec, _, ok := podSpecOf(lo.o)
		if !ok {
			continue
		}
		ns := lo.o.GetNamespace()
		missing := kubeapi.MissingInputs(spec, func(kind, name string) (map[string]bool, bool) {
			in, ok := have[kind+"/"+ns+"/"+name]
			if !ok || in.layer > lo.layer || (in.synced && in.layer == lo.layer) {
				return nil, false
			}
			return in.keys, true
		})
		for _, m := range missing {
			if ref, _, isKey := strings.Cut(m, " key "); isKey {
				kind, name, _ := strings.Cut(ref, "/")
				if have[kind+"/"+ns+"/"+name].keys == nil {
					continue // a Secret whose keys the render does not list
				}
			}
			problems = append(problems, fmt.Sprintf("%s %s/%s (layer %s) reads %s, which is not in its layer or one before (an ExternalSecret's target: one before)",
				lo.o.GetKind(), ns, lo.o.GetName(), gitops.Layers[lo.layer].Dir, m))
		}
	}
	return problems
}

// identityUsers are the service accounts, as token subjects, that run
// pods using the target's workload identity (its pod labels): pod
// templates, and CloudNativePG Clusters, whose instances run under a
// service account named after the cluster with the cluster's
// inheritedMetadata labels (cloudnative-pg v1.30.0 docs/src/security.md,
// "Service account"; docs/src/labels_annotations.md).
func identityUsers(objs []layered, podLabels map[string]string) map[string]string {
	uses := func(labels map[string]string) bool {
		for k, v := range podLabels {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	users := map[string]string{}
	for _, lo := range objs {
		o := lo.o
		subject := ""
		if spec, labels, ok := podSpecOf(o); ok && uses(labels) {
			sa := spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			subject = "system:serviceaccount:" + o.GetNamespace() + ":" + sa
		}
		if o.GetKind() == "Cluster" && strings.HasPrefix(o.GetAPIVersion(), "postgresql.cnpg.io/") {
			labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "inheritedMetadata", "labels")
			if uses(labels) {
				subject = "system:serviceaccount:" + o.GetNamespace() + ":" + o.GetName()
			}
		}
		if subject != "" {
			users[subject] = o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
	}
	return users
}

// identitiesFederated: every pod that uses workload identity runs under a
// service account the stack federates (plan.Identities, each of which the
// target turns into one credential for its subject and the cluster's
// issuer: TestFederationReadsTheClusterOnce), and the stack federates
// none that nothing uses.
func identitiesFederated(objs []layered, p *plan.Stack) []string {
	f, ok := p.Target.(target.Federator)
	if !ok || len(p.Identities) == 0 {
		return nil
	}
	federated := map[string]bool{}
	for _, id := range p.Identities {
		federated[id.Subject()] = true
	}
	users := identityUsers(objs, f.WorkloadIdentity("client-id").PodLabels)
	var problems []string
	for subject, who := range users {
		if !federated[subject] {
			problems = append(problems, who+" signs in as "+subject+", which has no federated credential")
		}
	}
	for subject := range maps.Keys(federated) {
		if users[subject] == "" {
			problems = append(problems, "a federated credential for "+subject+", which no pod of the render uses")
		}
	}
	return problems
}

// checkInvariants checks a render against the rules that hold across its
// parts, whatever the stack.
func checkInvariants(t *testing.T, dir string, p *plan.Stack) {
	t.Helper()
	objs := treeObjects(t, dir)
	if len(objs) == 0 {
		t.Fatalf("no object in the render %s", dir)
	}
	problems := append(inputsBeforePods(objs), identitiesFederated(objs, p)...)
	for _, problem := range append(problems, metricsExported(objs, imageDefaultCounters(t))...) {
		t.Error(problem)
	}
}

// The identity invariant sees a missing credential: with only the weight
// download federated, as before CloudNativePG's and Velero's service
// accounts were, the prod render's pgvector and Velero pods are named.
func TestInvariantsSeeAMissingCredential(t *testing.T) {
	t.Parallel()
	// prod with a pgvector database backed up to the weights account (as
	// an identity of its own, which may write) and Velero signing in with
	// workload identity
	dir, p := renderFor(t, "prod", gitops.Flux, "", func(cfg *config.Config) {
		cfg.VectorDBs = stacktest.Config(t, "dev").VectorDBs
		cfg.VectorDBs[0].Backup = "https://acmemodels.blob.core.windows.net/vector-backups/rag"
		cfg.Storage.BackupClientID, cfg.Storage.BackupIdentityName = "0c9d8e7f-6a5b-4c3d-8e2f-1a0b9c8d7e6f", "acme-vector-backups"
		cfg.Backup.Install = true
		cfg.Policies.AllowedRegistries.Registries = append(cfg.Policies.AllowedRegistries.Registries, "docker.io/velero")
		l := *cfg.Backup.Location
		l.ClientID, l.IdentityName = "5b0e7c1d-2f3a-4b6c-9d8e-7f1a2b3c4d5e", "acme-velero"
		cfg.Backup.Location = &l
	})
	objs := treeObjects(t, dir)
	if len(p.Identities) < 3 {
		t.Fatalf("prod federates %d identities, want the download's, pgvector's and Velero's", len(p.Identities))
	}
	before := *p
	before.Identities = p.Identities[:0:0]
	for _, id := range p.Identities {
		if id.ServiceAccount == "weights-download" {
			before.Identities = append(before.Identities, id)
		}
	}
	problems := strings.Join(identitiesFederated(objs, &before), "\n")
	for _, want := range []string{"Cluster/", "velero"} {
		if !strings.Contains(problems, want) {
			t.Errorf("with only the download federated, the invariant does not name %q:\n%s", want, problems)
		}
	}
}

// The delivery-order invariant sees an ExternalSecret in its reader's
// layer: the operator makes its Secret only after both are applied.
func TestInvariantsSeeASecretSyncedTooLate(t *testing.T) {
	t.Parallel()
	obj := func(y string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	es := obj(`{apiVersion: external-secrets.io/v1, kind: ExternalSecret, metadata: {name: store-keys, namespace: models},
spec: {target: {name: store-keys}, data: [{secretKey: key, remoteRef: {key: k}}]}}`)
	job := obj(`{apiVersion: batch/v1, kind: Job, metadata: {name: download, namespace: models},
spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: x, envFrom: [{secretRef: {name: store-keys}}]}]}}}}`)
	if got := inputsBeforePods([]layered{{es, 1}, {job, 2}}); len(got) != 0 {
		t.Errorf("an ExternalSecret a layer before its reader: %v", got)
	}
	if got := inputsBeforePods([]layered{{es, 2}, {job, 2}}); len(got) != 1 {
		t.Errorf("an ExternalSecret in its reader's layer: %v, want one problem", got)
	}
}
