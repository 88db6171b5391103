package kubeapi

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's rule: every non-optional Secret or ConfigMap (and key) a
// container's environment or a volume names must exist.
func TestMissingInputs(t *testing.T) {
	yes := true
	spec := &corev1.PodSpec{
		InitContainers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}}},
		Containers: []corev1.Container{{Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "key"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "opt"}, Key: "k", Optional: &yes}}},
		}}},
		Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}},
	}
	have := map[string]map[string]bool{"Secret/api": {"other": true}, "ConfigMap/conf": {}}
	got := MissingInputs(spec, func(kind, name string) (map[string]bool, bool) { k, ok := have[kind+"/"+name]; return k, ok })
	if want := []string{"Secret/api key key", "Secret/creds"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	have["Secret/creds"], have["Secret/api"] = map[string]bool{}, map[string]bool{"key": true}
	if got := MissingInputs(spec, func(kind, name string) (map[string]bool, bool) { k, ok := have[kind+"/"+name]; return k, ok }); len(got) != 0 {
		t.Errorf("everything is there, got %v", got)
	}
}
