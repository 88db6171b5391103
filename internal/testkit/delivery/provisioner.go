package delivery

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
)

// StartProvisioner is the platform's storage provisioner: it makes a
// volume for every claim that waits for one, bound to that claim (the
// persistent-volume binder of the controller-manager then binds them), so
// a claim a delivery creates becomes Bound as on a cluster with a dynamic
// provisioner. It stops when the test ends.
func (c *Cluster) StartProvisioner(t testing.TB) {
	t.Helper()
	made := map[string]bool{}
	c.every(t, func(ctx context.Context) {
		var claims corev1.PersistentVolumeClaimList
		if err := c.Client.List(ctx, &claims); err != nil {
			return
		}
		for _, pvc := range claims.Items {
			k := pvc.Namespace + "/" + pvc.Name + "/" + string(pvc.UID)
			if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || made[k] {
				continue
			}
			if c.Client.Create(ctx, volumeFor(&pvc)) == nil {
				made[k] = true
			}
		}
	})
}

// every runs step twice a second in the background, as a controller's
// loop, until the test ends.
func (c *Cluster) every(t testing.TB, step func(context.Context)) {
	kubeapi.Every(t, 500*time.Millisecond, step)
}

func volumeFor(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if size.IsZero() {
		size = resource.MustParse("1Gi")
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-" + pvc.Name + "-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:      pvc.Spec.AccessModes,
			StorageClassName: ptrValue(pvc.Spec.StorageClassName),
			ClaimRef:         &corev1.ObjectReference{Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				NFS: &corev1.NFSVolumeSource{Server: "10.0.0.9", Path: "/" + pvc.Namespace + "/" + pvc.Name}},
		},
	}
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
