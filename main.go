// Command gpu-node-pools is the Pulumi program; everything is in program.Program.
package main

import "github.com/natron/gpu-node-pools/stacks/program"

func main() {
	// pulumi.Run, logging a program error as the program's own message
	program.Run(program.Program)
}
