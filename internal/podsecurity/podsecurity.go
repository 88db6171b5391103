// Package podsecurity is how the program meets the Kubernetes Pod Security
// Standards: the levels its namespaces enforce, the restricted security
// contexts of the pods it runs, and the level a pod spec needs, judged by
// the Pod Security admission library that kube-apiserver itself runs
// (k8s.io/pod-security-admission).
package podsecurity

import (
	"encoding/json"
	"fmt"
	"slices"

	pcorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	pmetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/natron/gpu-node-pools/internal/kube"
)

// Levels, strictest last.
const (
	Privileged = string(api.LevelPrivileged)
	Baseline   = string(api.LevelBaseline)
	Restricted = string(api.LevelRestricted)
)

// Levels lists the levels, most permissive first.
var Levels = []string{Privileged, Baseline, Restricted}

// Stricter reports whether level a is stricter than b.
func Stricter(a, b string) bool { return api.CompareLevels(api.Level(a), api.Level(b)) > 0 }

// Labels are a namespace's Pod Security admission labels: enforce, warn
// and audit at one level (the latest version of the standard), so that a
// warning never hides what enforcement would do.
func Labels(level string) map[string]string {
	return map[string]string{
		api.EnforceLevelLabel: level,
		api.WarnLevelLabel:    level,
		api.AuditLevelLabel:   level,
		kube.ManagedByLabel:   kube.ManagedBy,
	}
}

// UID and GID are the non-root user every pod of the program runs as
// (none of the images it runs needs a name for it: HOME is set). Above
// 10000, so that it maps to no user of the node.
const (
	UID = 10001
	GID = 10001
)

// PodContext is the restricted pod security context: a fixed non-root
// user, the weights cache group-owned by fsGroup (readable by every
// replica, writable by the download) and the runtime's seccomp profile.
func PodContext() map[string]any {
	return map[string]any{
		"runAsNonRoot":   true,
		"runAsUser":      UID,
		"runAsGroup":     GID,
		"fsGroup":        GID,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}
}

// ContainerContext is the restricted container security context: no
// privilege escalation, no capabilities and, where the image writes only
// to the emptyDirs its pod mounts, a read-only root filesystem. It says
// runAsNonRoot again because a chart's default container context may say
// otherwise (vllm-stack 0.1.12 defaults it to false), and the container's
// wins over the pod's.
func ContainerContext(readOnlyRoot bool) map[string]any {
	return map[string]any{
		"allowPrivilegeEscalation": false,
		"capabilities":             map[string]any{"drop": []any{"ALL"}},
		"readOnlyRootFilesystem":   readOnlyRoot,
		"runAsNonRoot":             true,
	}
}

// ScratchVolume is an emptyDir for what an image writes (HOME, /tmp,
// compile caches) under a read-only root filesystem, bounded so that a
// runaway cache evicts its pod rather than filling the node's disk.
func ScratchVolume(name, sizeLimit string) map[string]any {
	return map[string]any{"name": name, "emptyDir": map[string]any{"sizeLimit": sizeLimit}}
}

var evaluator = func() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("pod security checks: %v", err)) // the library's own table; cannot fail
	}
	return e
}()

// Violations are what Pod Security admission at a level says of a pod
// spec (plain data, as the program's objects are built), in the API
// server's words; none when the level admits it.
func Violations(level string, podSpec map[string]any) ([]string, error) {
	var spec corev1.PodSpec
	raw, err := json.Marshal(podSpec)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("pod spec: %w", err)
	}
	lv := api.LevelVersion{Level: api.Level(level), Version: api.LatestVersion()}
	agg := policy.AggregateCheckResults(evaluator.EvaluatePod(lv, &metav1.ObjectMeta{}, &spec))
	if agg.Allowed {
		return nil, nil
	}
	return []string{agg.ForbiddenReason() + ": " + agg.ForbiddenDetail()}, nil
}

// Needs is the strictest level that admits a pod spec.
func Needs(podSpec map[string]any) (string, error) {
	for _, l := range slices.Backward(Levels) {
		v, err := Violations(l, podSpec)
		if err != nil {
			return "", err
		}
		if len(v) == 0 {
			return l, nil
		}
	}
	return Privileged, nil
}

// Namespace is a namespace the program creates, enforcing (and warning
// and auditing at) the Pod Security level.
func Namespace(name, level string) *pcorev1.NamespaceArgs {
	return &pcorev1.NamespaceArgs{Metadata: &pmetav1.ObjectMetaArgs{Name: pulumi.String(name), Labels: pulumi.ToStringMap(Labels(level))}}
}
