// Command gpu-node-pools is the Pulumi program; everything is in stacks.Program.
package main

import "github.com/natron/gpu-node-pools/stacks"

func main() {
	// pulumi.Run, logging a program error as the program's own message
	stacks.Run(stacks.Program)
}
