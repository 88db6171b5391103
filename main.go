// Command gpu-node-pools is the Pulumi program; everything is in stacks.Program.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/stacks"
)

func main() {
	pulumi.Run(stacks.Program)
}
