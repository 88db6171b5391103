package kubeapi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// InputsAnnotation marks a pod whose Secrets and ConfigMaps all exist: with
// the inputs gate, KWOK starts (and completes) only pods that carry it.
const InputsAnnotation = "sim.gpu-node-pools.test/inputs"

// gatedStages are KWOK's stages with the pod-ready and pod-complete stages
// waiting for InputsAnnotation.
func gatedStages(t testing.TB, stages, dir string) string {
	t.Helper()
	b, err := os.ReadFile(stages)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	gated := 0
	for _, doc := range strings.Split(string(b), "\n---") {
		var st map[string]any
		if err := yaml.Unmarshal([]byte(doc), &st); err != nil || st == nil {
			continue
		}
		meta, _ := st["metadata"].(map[string]any)
		if name := meta["name"]; name == "pod-ready" || name == "pod-complete" {
			sel := st["spec"].(map[string]any)["selector"].(map[string]any)
			exprs, _ := sel["matchExpressions"].([]any)
			sel["matchExpressions"] = append(exprs, map[string]any{
				"key": `.metadata.annotations["` + InputsAnnotation + `"]`, "operator": "In", "values": []any{"present"}})
			gated++
		}
		out, err := yaml.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(out))
	}
	if gated != 2 {
		t.Fatalf("%s: found %d of the pod-ready and pod-complete stages", stages, gated)
	}
	f := filepath.Join(dir, "stages-gated.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// inputsGate does the kubelet's part that KWOK leaves out: a container
// whose environment or volumes name a Secret or ConfigMap (or a key of
// one) that does not exist is not started (kubelet v1.37.2
// pkg/kubelet/kubelet_pods.go makeEnvironmentVariables: "couldn't find key
// … in Secret", CreateContainerConfigError; pkg/volume/secret/secret.go and
// configmap/configmap.go SetUpAt for volumes), unless the reference is
// optional. It marks each bound pod once everything it reads exists, and
// keeps what the others wait for.
type inputsGate struct {
	client *kubernetes.Clientset
	mu     sync.Mutex
	// waiting is pod (namespace/name) -> what it waits for.
	waiting map[string][]string
}

func (s *Server) startInputsGate(t testing.TB) {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	g := &inputsGate{client: c, waiting: map[string][]string{}}
	s.gate = g
	Every(t, 300*time.Millisecond, g.pass)
}

// pass marks every bound pod whose inputs exist.
func (g *inputsGate) pass(ctx context.Context) {
	pods, err := g.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	secrets, configMaps := map[string]map[string]bool{}, map[string]map[string]bool{}
	if list, err := g.client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range list.Items {
			secrets[s.Namespace+"/"+s.Name] = keysOf(s.Data, nil)
		}
	} else {
		return
	}
	if list, err := g.client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range list.Items {
			configMaps[c.Namespace+"/"+c.Name] = keysOf(c.BinaryData, c.Data)
		}
	} else {
		return
	}
	waiting := map[string][]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || p.Annotations[InputsAnnotation] == "present" {
			continue
		}
		missing := MissingInputs(&p.Spec, func(kind, name string) (map[string]bool, bool) {
			m := secrets
			if kind == "ConfigMap" {
				m = configMaps
			}
			keys, ok := m[p.Namespace+"/"+name]
			return keys, ok
		})
		if len(missing) > 0 {
			waiting[p.Namespace+"/"+p.Name] = missing
			continue
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"present"}}}`, InputsAnnotation)
		_, _ = g.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	g.mu.Lock()
	g.waiting = waiting
	g.mu.Unlock()
}

func keysOf(b map[string][]byte, s map[string]string) map[string]bool {
	keys := map[string]bool{}
	for k := range b {
		keys[k] = true
	}
	for k := range s {
		keys[k] = true
	}
	return keys
}

// MissingInputs are the Secrets and ConfigMaps (and keys of them) a pod
// reads that lookup does not find, as "Secret/name" or "Secret/name key k",
// leaving out optional references: the kubelet's rule for starting its
// containers.
func MissingInputs(spec *corev1.PodSpec, lookup func(kind, name string) (map[string]bool, bool)) []string {
	var missing []string
	need := func(kind, name, key string, optional *bool) {
		if optional != nil && *optional {
			return
		}
		keys, ok := lookup(kind, name)
		switch {
		case !ok:
			missing = append(missing, kind+"/"+name)
		case key != "" && !keys[key]:
			missing = append(missing, kind+"/"+name+" key "+key)
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, ef := range c.EnvFrom {
			if r := ef.SecretRef; r != nil {
				need("Secret", r.Name, "", r.Optional)
			}
			if r := ef.ConfigMapRef; r != nil {
				need("ConfigMap", r.Name, "", r.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				need("Secret", r.Name, r.Key, r.Optional)
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				need("ConfigMap", r.Name, r.Key, r.Optional)
			}
		}
	}
	for _, v := range spec.Volumes {
		if s := v.Secret; s != nil {
			need("Secret", s.SecretName, "", s.Optional)
		}
		if c := v.ConfigMap; c != nil {
			need("ConfigMap", c.Name, "", c.Optional)
		}
		if p := v.Projected; p != nil {
			for _, src := range p.Sources {
				if s := src.Secret; s != nil {
					need("Secret", s.Name, "", s.Optional)
				}
				if c := src.ConfigMap; c != nil {
					need("ConfigMap", c.Name, "", c.Optional)
				}
			}
		}
	}
	sort.Strings(missing)
	return slices.Compact(missing)
}

// Waiting are the pods the inputs gate holds, each with what it waits for
// (empty without the gate).
func (s *Server) Waiting() map[string][]string {
	if s.gate == nil {
		return nil
	}
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	out := map[string][]string{}
	for k, v := range s.gate.waiting {
		out[k] = v
	}
	return out
}
