package plain

import (
	"strconv"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// ServiceArgs are a Service built as plain data (metadata name,
// namespace, labels, annotations; spec type, selector, externalName,
// ports) as the typed inputs the core group needs (Object refuses it):
// one mapping function then feeds both the program and the tests.
func ServiceArgs(obj map[string]any) *corev1.ServiceArgs {
	str := func(v any) pulumi.StringPtrInput {
		if s, ok := v.(string); ok && s != "" {
			return pulumi.String(s)
		}
		return nil
	}
	meta, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	args := &corev1.ServiceArgs{
		Metadata: &metav1.ObjectMetaArgs{Name: str(meta["name"]), Namespace: str(meta["namespace"]), Labels: stringMap(meta["labels"]), Annotations: stringMap(meta["annotations"])},
		Spec:     &corev1.ServiceSpecArgs{Type: str(spec["type"]), ExternalName: str(spec["externalName"]), Selector: stringMap(spec["selector"])},
	}
	ports, _ := spec["ports"].([]any)
	var out corev1.ServicePortArray
	for _, p := range ports {
		pm, _ := p.(map[string]any)
		port := corev1.ServicePortArgs{Name: str(pm["name"]), Protocol: str(pm["protocol"]), Port: pulumi.Int(Int(pm["port"]))}
		switch tp := pm["targetPort"].(type) {
		case string:
			port.TargetPort = pulumi.String(tp)
		case nil:
		default:
			port.TargetPort = pulumi.Int(Int(tp))
		}
		out = append(out, port)
	}
	args.Spec.(*corev1.ServiceSpecArgs).Ports = out
	return args
}

// Int is a JSON number (or a numeral) as an int; 0 for anything else.
func Int(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}
