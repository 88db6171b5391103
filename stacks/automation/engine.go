// Package automation drives customer stacks from Go through Pulumi's
// Automation API (single stacks and fleets), running the very program
// main.go runs, and loads a customer's stack file into a typed config.
package automation

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// Engine says how internal tools reach the Pulumi engine for customer stacks.
type Engine struct {
	// BackendURL is where state lives: file:///abs/dir, s3://..., or a
	// Pulumi Cloud URL.
	BackendURL string
	// SecretsProvider is "passphrase" (PULUMI_CONFIG_PASSPHRASE in Env) or
	// a KMS URL such as azurekeyvault://... .
	SecretsProvider string
	// Env is extra environment for the engine: the passphrase, Azure
	// credentials. It never goes to logs.
	Env map[string]string
	// PulumiRoot is the directory whose bin/ holds the pulumi CLI and the
	// plugins (the toolchain installer's output, minus /bin). Empty: PATH.
	PulumiRoot string
	// WorkDir keeps each stack's settings (its encryption salt) between
	// calls, in WorkDir/<stack>. Empty: a per-user cache directory.
	WorkDir string
	// ProjectDir is where a stack's relative paths (renderDir,
	// platform.chartDir) start, as they do for make and the CLI in the
	// project. Empty: the process's working directory.
	ProjectDir string
	// ChartDir is the directory of chart archives for stacks whose
	// platform.chartDir is not set (offline machines). Empty: Env's
	// GPU_NODE_POOLS_CHART_DIR, else the process's, else the charts'
	// upstream repositories.
	ChartDir string
	// Diff adds each resource's property diff to a preview's Progress
	// (thousands of lines of CRD schemas for a first preview); without it,
	// one line per resource and the summary.
	Diff bool
	// Progress receives the engine's human-readable output of every stack.
	Progress io.Writer
	// OnEvent receives every engine event, tagged with its stack.
	OnEvent func(stack string, e events.EngineEvent)
}

// env is the engine's environment: the toolchain on PATH, no plugin
// downloads, the backend, and the caller's settings.
func (e Engine) env() (map[string]string, []auto.LocalWorkspaceOption, error) {
	env := map[string]string{
		// The toolchain ships the plugins; never try to download one.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		// The CLI and its plugins live for one operation: collecting
		// garbage a quarter as often took a fleet preview's CPU from 43 s
		// to 36 s (BenchmarkFleetPreview), for about 90 MB more per process.
		"GOGC": "400",
		// A stack file without a salt (no secrets yet, as a new customer's
		// is) would otherwise get a new, unrelated passphrase salt in every
		// job's work directory, and its state re-encrypted under it; this
		// keeps the secrets provider its state records (pulumi pkg/v3
		// cmd/pulumi/stack/secrets.go and secrets/passphrase/manager.go at
		// v3.274.1, pulumi#16412).
		"PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER": "true",
	}
	if e.BackendURL != "" {
		env["PULUMI_BACKEND_URL"] = e.BackendURL
	}
	for k, v := range e.Env {
		env[k] = v
	}
	if e.PulumiRoot != "" {
		// Plugins are found on PATH (as ambient plugins), not beside the CLI.
		env["PATH"] = filepath.Join(e.PulumiRoot, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	}
	cmd, err := pulumiCommand(e.PulumiRoot)
	if err != nil {
		return nil, nil, err
	}
	return env, []auto.LocalWorkspaceOption{auto.Pulumi(cmd), auto.EnvVars(env)}, nil
}

// commands holds one checked CLI per toolchain root ("": the one on PATH):
// each workspace would otherwise run and parse `pulumi version` again, a
// quarter second per stack of a fleet and twice per render.
var commands sync.Map // root -> auto.PulumiCommand

func pulumiCommand(root string) (auto.PulumiCommand, error) {
	if cmd, ok := commands.Load(root); ok {
		return cmd.(auto.PulumiCommand), nil
	}
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root})
	if err != nil {
		where := "on PATH"
		if root != "" {
			where = "in " + filepath.Join(root, "bin")
		}
		return nil, fmt.Errorf("pulumi CLI %s: %w", where, err)
	}
	commands.Store(root, cmd)
	return cmd, nil
}

// workspaceOptions are an inline stack's workspace: its own work directory
// (which keeps its settings, the encryption salt), the secrets provider and
// the project.
func (e Engine) workspaceOptions(name string) ([]auto.LocalWorkspaceOption, error) {
	opts, _, err := e.workspace(name, nil)
	return opts, err
}

// workspace is workspaceOptions with the project's config declarations
// (Pulumi.yaml's types and defaults), and the work directory.
func (e Engine) workspace(name string, decls map[string]workspace.ProjectConfigType) ([]auto.LocalWorkspaceOption, string, error) {
	_, opts, err := e.env()
	if err != nil {
		return nil, "", err
	}
	dir := e.WorkDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, "", err
		}
		dir = filepath.Join(base, "gpu-node-pools", "workspaces")
	}
	dir = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	secrets := e.SecretsProvider
	if secrets == "" {
		secrets = "passphrase"
	}
	project := workspace.Project{Name: tokens.PackageName(config.Namespace), Runtime: workspace.NewProjectRuntimeInfo("go", nil), Config: decls}
	return append(opts, auto.WorkDir(dir), auto.SecretsProvider(secrets), auto.Project(project)), dir, nil
}

// getenv is a variable of the engine's environment: Env's, else this
// process's.
func (e Engine) getenv(k string) string {
	if v, ok := e.Env[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// progress is where the engine's human-readable output goes.
func (e Engine) progress() []io.Writer {
	if e.Progress == nil {
		return nil
	}
	return []io.Writer{e.Progress}
}

// resolve is cfg as the engine runs it: relative paths from ProjectDir,
// and the chart directory from the Engine when the stack names none (the
// program runs in this process, which does not see Env).
func (e Engine) resolve(cfg *config.Config) *config.Config {
	c := *cfg
	at := func(p string) string {
		if p == "" || filepath.IsAbs(p) || e.ProjectDir == "" {
			return p
		}
		return filepath.Join(e.ProjectDir, p)
	}
	c.RenderDir = at(c.RenderDir)
	if c.Platform.ChartDir == "" {
		c.Platform.ChartDir = cmp.Or(e.ChartDir, e.Env[plan.ChartDirEnv])
	}
	c.Platform.ChartDir = at(c.Platform.ChartDir)
	return &c
}
