package secret

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/plain"
)

// Place puts a Secret of the given type ("" for Opaque) holding data in a
// namespace, its values as Pulumi secrets. A render leaves it out, since
// its files would hold the values in plain text: then nothing is
// registered and the External that names it (its keys are data's) comes
// back instead, for the cluster's secret manager or an ExternalSecret.
// A value given as a plain pulumi.String is not secret: the External
// carries it, so that no one has to store it as a secret.
func Place(ctx *pulumi.Context, resource, namespace, name, typ string, data pulumi.StringMap, rendering bool,
	opts ...pulumi.ResourceOption) (*corev1.Secret, *External, error) {
	ext := external(namespace, name, typ, data)
	if rendering && len(ext.Keys) > 0 {
		return nil, ext, nil
	}
	// nothing secret (an rclone remote read through workload identity):
	// written as it is, since an ExternalSecret that reads nothing from
	// its store never makes its Secret (external-secrets v0.16.2
	// externalsecret_controller.go: no data, deletionPolicy Retain)
	args := &corev1.SecretArgs{
		Metadata:   &metav1.ObjectMetaArgs{Name: pulumi.String(name), Namespace: pulumi.String(namespace)},
		StringData: data,
	}
	if len(ext.Keys) > 0 {
		args.StringData = pulumi.ToSecret(data).(pulumi.StringMapOutput)
	}
	if typ != "" {
		args.Type = pulumi.String(typ)
	}
	s, err := corev1.NewSecret(ctx, resource, args, opts...)
	return s, nil, err
}

func external(namespace, name, typ string, data pulumi.StringMap) *External {
	e := &External{Namespace: namespace, Name: name, Type: typ}
	for _, k := range plain.SortedKeys(data) {
		if v, ok := data[k].(pulumi.String); ok {
			if e.Values == nil {
				e.Values = map[string]string{}
			}
			e.Values[k] = string(v)
			continue
		}
		e.Keys = append(e.Keys, k)
	}
	return e
}
