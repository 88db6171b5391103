package plain

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Object registers a Kubernetes object built as plain data (apiVersion,
// kind, metadata with name, namespace, labels and annotations, and any
// other top-level fields) by a pure mapping function.
func Object(ctx *pulumi.Context, name string, obj map[string]any, opts ...pulumi.ResourceOption) (*apiextensions.CustomResource, error) {
	str := func(v any) string { s, _ := v.(string); return s }
	// An untyped resource's type token is the apiVersion: the core group's
	// bare "v1" makes one the provider refuses at apply time.
	if api := str(obj["apiVersion"]); !strings.Contains(api, "/") {
		return nil, fmt.Errorf("%s %s: apiVersion %q is the core group's: register it with its typed constructor (core/v1)", str(obj["kind"]), name, api)
	}
	meta, _ := obj["metadata"].(map[string]any)
	m := &metav1.ObjectMetaArgs{Name: pulumi.String(str(meta["name"]))}
	if ns := str(meta["namespace"]); ns != "" {
		m.Namespace = pulumi.String(ns)
	}
	m.Labels = stringMap(meta["labels"])
	m.Annotations = stringMap(meta["annotations"])
	other := kubernetes.UntypedArgs{}
	for k, v := range obj {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			other[k] = v
		}
	}
	return apiextensions.NewCustomResource(ctx, name, &apiextensions.CustomResourceArgs{
		ApiVersion:  pulumi.String(str(obj["apiVersion"])),
		Kind:        pulumi.String(str(obj["kind"])),
		Metadata:    m,
		OtherFields: other,
	}, opts...)
}

func stringMap(v any) pulumi.StringMapInput {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := pulumi.StringMap{}
	for k, e := range m {
		out[k] = pulumi.String(fmt.Sprint(e))
	}
	return out
}
