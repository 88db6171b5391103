// Package component is how every Pulumi component of the program starts:
// it refuses missing args before registering anything, registers itself,
// and gives its children their options (parented to it, on its provider).
package component

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Start registers c, a component of type typ named name, and returns the
// options of its children: parented to c and, when provider is given, on
// the provider it returns (the workload cluster's, the management
// cluster's). ok is false when the component's args, or what they must
// hold, are missing: then nothing is registered and the error names the
// component and what it needs (need). provider is called only when ok.
func Start(ctx *pulumi.Context, typ, name string, c pulumi.ComponentResource, ok bool, need string,
	provider func() pulumi.ProviderResource, opts ...pulumi.ResourceOption) ([]pulumi.ResourceOption, error) {
	if !ok {
		return nil, fmt.Errorf("%s %s: args with %s are required", typ, name, need)
	}
	if err := ctx.RegisterComponentResource(typ, name, c, opts...); err != nil {
		return nil, fmt.Errorf("%s %s: %w", typ, name, err)
	}
	child := []pulumi.ResourceOption{pulumi.Parent(c)}
	if provider != nil {
		child = append(child, pulumi.Provider(provider()))
	}
	return child, nil
}
