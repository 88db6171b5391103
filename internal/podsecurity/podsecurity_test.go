package podsecurity_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

func pod(podSC, containerSC map[string]any, volumes ...any) map[string]any {
	c := map[string]any{"name": "c", "image": "i"}
	if containerSC != nil {
		c["securityContext"] = containerSC
	}
	spec := map[string]any{"containers": []any{c}}
	if podSC != nil {
		spec["securityContext"] = podSC
	}
	if len(volumes) > 0 {
		spec["volumes"] = volumes
	}
	return spec
}

// The level a pod spec needs, as the Pod Security admission library
// (the code kube-apiserver runs) judges it: our restricted contexts are
// restricted, and each thing they take away costs the level it should.
func TestNeeds(t *testing.T) {
	t.Parallel()
	restricted := func(mut func(p, c map[string]any)) map[string]any {
		p, c := podsecurity.PodContext(), podsecurity.ContainerContext(true)
		if mut != nil {
			mut(p, c)
		}
		return pod(p, c)
	}
	tests := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"our contexts", restricted(nil), podsecurity.Restricted},
		{"our contexts, writable root", pod(podsecurity.PodContext(), podsecurity.ContainerContext(false)), podsecurity.Restricted},
		{"emptyDir scratch", pod(podsecurity.PodContext(), podsecurity.ContainerContext(true), podsecurity.ScratchVolume("tmp", "1Gi")), podsecurity.Restricted},
		{"no contexts at all", pod(nil, nil), podsecurity.Baseline},
		{"root", restricted(func(p, _ map[string]any) { p["runAsUser"] = 0; delete(p, "runAsNonRoot") }), podsecurity.Baseline},
		{"escalation", restricted(func(_, c map[string]any) { c["allowPrivilegeEscalation"] = true }), podsecurity.Baseline},
		{"no seccomp", restricted(func(p, _ map[string]any) { delete(p, "seccompProfile") }), podsecurity.Baseline},
		{"CHOWN added", restricted(func(_, c map[string]any) { c["capabilities"].(map[string]any)["add"] = []any{"CHOWN"} }), podsecurity.Baseline},
		{"NET_BIND_SERVICE added", restricted(func(_, c map[string]any) { c["capabilities"].(map[string]any)["add"] = []any{"NET_BIND_SERVICE"} }), podsecurity.Restricted},
		{"SYS_ADMIN added", restricted(func(_, c map[string]any) { c["capabilities"].(map[string]any)["add"] = []any{"SYS_ADMIN"} }), podsecurity.Privileged},
		{"privileged", restricted(func(_, c map[string]any) { c["privileged"] = true }), podsecurity.Privileged},
		{"hostPath", pod(podsecurity.PodContext(), podsecurity.ContainerContext(true), map[string]any{"name": "h", "hostPath": map[string]any{"path": "/dev"}}), podsecurity.Privileged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := podsecurity.Needs(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				v, _ := podsecurity.Violations(podsecurity.Restricted, tt.spec)
				t.Errorf("needs %s, want %s (restricted says %v)", got, tt.want, v)
			}
		})
	}
}

// The API server's own words come back for a violation.
func TestViolationsSayWhy(t *testing.T) {
	t.Parallel()
	v, err := podsecurity.Violations(podsecurity.Restricted, pod(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || !strings.Contains(v[0], "allowPrivilegeEscalation != false") || !strings.Contains(v[0], "runAsNonRoot != true") {
		t.Errorf("violations %q", v)
	}
}

func TestLabels(t *testing.T) {
	t.Parallel()
	got := podsecurity.Labels(podsecurity.Baseline)
	for _, mode := range []string{"enforce", "warn", "audit"} {
		if got["pod-security.kubernetes.io/"+mode] != podsecurity.Baseline {
			t.Errorf("%s label %q, want baseline", mode, got["pod-security.kubernetes.io/"+mode])
		}
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	reason := "finetune image runs as root until ML-412"
	tests := []struct {
		name string
		spec podsecurity.Spec
		want []string
	}{
		{"empty", nil, nil},
		{"lower batch", podsecurity.Spec{"batch": {Level: "baseline", Reason: reason}}, nil},
		{"lower keda to privileged", podsecurity.Spec{"keda": {Level: "privileged", Reason: reason}}, nil},
		{"unknown role", podsecurity.Spec{"gpu-platform": {Level: "baseline", Reason: reason}},
			[]string{`p[gpu-platform]: must be one of serving, batch, keda, got "gpu-platform"`}},
		{"not lower", podsecurity.Spec{"serving": {Level: "restricted", Reason: reason}},
			[]string{`p[serving].level: restricted is the default; only lowering is configurable (allowed values: baseline, privileged)`}},
		{"unknown level", podsecurity.Spec{"serving": {Level: "lax", Reason: reason}},
			[]string{`p[serving].level: must be one of baseline, privileged, got "lax"`}},
		{"no reason", podsecurity.Spec{"batch": {Level: "baseline", Reason: " root "}},
			[]string{`p[batch].reason: say why the batch namespace enforces less than restricted, in at least 15 characters`}},
		{"every problem at once", podsecurity.Spec{"serving": {Level: "lax"}, "batch": {Level: "restricted"}},
			[]string{"p[batch].level", "p[batch].reason", "p[serving].level", "p[serving].reason"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.spec.Validate(field.NewPath("p"))
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d problems %v, want %d", len(errs), errs, len(tt.want))
			}
			for i, e := range errs {
				if !strings.HasPrefix(fielderr.Message(e), tt.want[i]) {
					t.Errorf("problem %d: %q, want prefix %q", i, fielderr.Message(e), tt.want[i])
				}
			}
			if tt.want == nil {
				if got := tt.spec.Level("batch"); tt.spec["batch"].Level != "" && got != tt.spec["batch"].Level {
					t.Errorf("batch level %s", got)
				}
			}
		})
	}
	if got := (podsecurity.Spec{}).Level("serving"); got != podsecurity.Restricted {
		t.Errorf("default level %s, want restricted", got)
	}
}
