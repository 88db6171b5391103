package kube

// WorkloadIdentity is what lets a pod sign in to a cloud as an identity
// without a key: labels on the pod and annotations on its service
// account. The target decides them (each cloud spells them its own way);
// components copy them onto their objects. The zero value is none.
type WorkloadIdentity struct {
	PodLabels                 map[string]string
	ServiceAccountAnnotations map[string]string
}

// IsZero reports whether there is no identity to use.
func (w WorkloadIdentity) IsZero() bool {
	return len(w.PodLabels) == 0 && len(w.ServiceAccountAnnotations) == 0
}

// PodLabelValues and ServiceAccountAnnotationValues are the maps as chart
// values and unstructured objects take them.
func (w WorkloadIdentity) PodLabelValues() map[string]any { return AnyMap(w.PodLabels) }

// ServiceAccountAnnotationValues: see PodLabelValues.
func (w WorkloadIdentity) ServiceAccountAnnotationValues() map[string]any {
	return AnyMap(w.ServiceAccountAnnotations)
}
