package program

import (
	"errors"
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/common/constant"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Run is pulumi.Run for main.go, with one difference: a program error is
// logged as the program's own message, once. pulumi.Run wraps it as
// "an unhandled error occurred: program failed:" around a multierror's
// "1 error occurred: *" (sdk/v3 v3.274.1 go/pulumi/run.go), which buries
// the config keys a platform engineer has to fix.
func Run(program pulumi.RunFunc) {
	ran := false
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		ran = true
		err := program(ctx)
		if err != nil {
			// An error diagnostic fails the update like a returned error.
			if logErr := ctx.Log.Error(err.Error(), nil); logErr != nil {
				fmt.Fprintln(os.Stderr, "error:", err)
			}
		}
		return err
	})
	switch {
	case err == nil:
		return
	case errors.Is(err, pulumi.ErrPlugins):
		// the engine asked for the plugin list, which only pulumi.Run prints
		pulumi.Run(program)
		return
	case !ran:
		// no engine to log to: the program was started outside pulumi
		fmt.Fprintln(os.Stderr, "error:", err)
	}
	// the engine prints nothing more for this status: the error is logged
	os.Exit(constant.ExitStatusLoggedError)
}
