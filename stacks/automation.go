package stacks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

var stackNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

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
	// Progress receives the engine's human-readable output of every stack.
	Progress io.Writer
	// OnEvent receives every engine event, tagged with its stack.
	OnEvent func(stack string, e events.EngineEvent)
}

// Stack is one customer stack driven through the Automation API. It runs
// the very Program that main.go runs.
type Stack struct {
	name       string
	engine     Engine
	stack      auto.Stack
	renderOnly bool
}

// OpenStack validates cfg and then creates or selects the stack and writes
// its config. An invalid config fails here, before the engine starts.
func OpenStack(ctx context.Context, name string, cfg *Config, e Engine) (*Stack, error) {
	return openStack(ctx, name, cfg, Program, e)
}

// OpenWorkloadStack is OpenStack for WorkloadProgram: the stack's
// Kubernetes side applied to the cluster kubeconfig reaches, without pools.
func OpenWorkloadStack(ctx context.Context, name string, cfg *Config, kubeconfig Secret, e Engine) (*Stack, error) {
	if cfg != nil && cfg.RenderDir != "" {
		return nil, fmt.Errorf("stack %s: a workload stack applies to the cluster its kubeconfig reaches; unset renderDir, got %q", name, cfg.RenderDir)
	}
	if kubeconfig == "" {
		return nil, fmt.Errorf("stack %s: a workload stack needs the cluster's kubeconfig", name)
	}
	return openStack(ctx, name, cfg, WorkloadProgram(kubeconfig), e)
}

func openStack(ctx context.Context, name string, cfg *Config, program func(*pulumi.Context) error, e Engine) (*Stack, error) {
	if cfg == nil {
		return nil, fmt.Errorf("stack %s: config is required", name)
	}
	if err := Validate(cfg); err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	if !stackNameRe.MatchString(name) {
		return nil, fmt.Errorf("stack %q: a stack name is 1-100 letters, digits, '-', '_' or '.'", name)
	}
	cm, err := ConfigMap(cfg)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	opts, err := e.workspaceOptions(name)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	s, err := auto.UpsertStackInlineSource(ctx, name, Namespace, program, opts...)
	if err != nil {
		return nil, fmt.Errorf("stack %s: select or create: %w", name, err)
	}
	if err := replaceConfig(ctx, s, cm); err != nil {
		return nil, fmt.Errorf("stack %s: config: %w", name, err)
	}
	return &Stack{name: name, engine: e, stack: s, renderOnly: cfg.RenderDir != ""}, nil
}

func (e Engine) workspaceOptions(name string) ([]auto.LocalWorkspaceOption, error) {
	env := map[string]string{
		// The toolchain ships the plugins; never try to download one.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
	}
	if e.BackendURL != "" {
		env["PULUMI_BACKEND_URL"] = e.BackendURL
	}
	for k, v := range e.Env {
		env[k] = v
	}
	opts := []auto.LocalWorkspaceOption{}
	if e.PulumiRoot != "" {
		bin := filepath.Join(e.PulumiRoot, "bin")
		// Plugins are found on PATH (as ambient plugins), not beside the CLI.
		env["PATH"] = bin + string(os.PathListSeparator) + os.Getenv("PATH")
		cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: e.PulumiRoot})
		if err != nil {
			return nil, fmt.Errorf("pulumi CLI in %s: %w", bin, err)
		}
		opts = append(opts, auto.Pulumi(cmd))
	}
	dir := e.WorkDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(base, "gpu-node-pools", "workspaces")
	}
	dir = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	secrets := e.SecretsProvider
	if secrets == "" {
		secrets = "passphrase"
	}
	return append(opts,
		auto.WorkDir(dir),
		auto.EnvVars(env),
		auto.SecretsProvider(secrets),
		auto.Project(workspace.Project{Name: tokens.PackageName(Namespace), Runtime: workspace.NewProjectRuntimeInfo("go", nil)}),
	), nil
}

// ConfigMap renders a typed config as stack config: the same keys and
// values as a Pulumi.<stack>.yaml. Blocks holding secrets are secret.
func ConfigMap(cfg *Config) (auto.ConfigMap, error) {
	cm := auto.ConfigMap{key("target"): {Value: string(cfg.Target)}}
	if cfg.RenderDir != "" {
		cm[key("renderDir")] = auto.ConfigValue{Value: cfg.RenderDir}
	}
	if cfg.Protect != nil {
		cm[key("protect")] = auto.ConfigValue{Value: fmt.Sprint(*cfg.Protect)}
	}
	add := func(k string, v any, secret bool) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key(k), err)
		}
		cm[key(k)] = auto.ConfigValue{Value: string(b), Secret: secret}
		return nil
	}
	var errs []error
	if cfg.AKS != nil {
		errs = append(errs, add("aks", cfg.AKS, false))
	}
	if n := cfg.Natron; n != nil {
		errs = append(errs, add("natron", n, n.Kubeconfig != "" || n.ManagementKubeconfig != ""))
	}
	errs = append(errs, add("pools", cfg.Pools, false))
	// Blocks left at their zero value stay unset, as in a stack file.
	for _, b := range []struct {
		k      string
		v      any
		secret bool
	}{
		{"platform", cfg.Platform, false},
		{"storage", cfg.Storage, cfg.Storage != nil && (cfg.Storage.AccessKey != "" || cfg.Storage.SecretKey != "" || cfg.Storage.AccountKey != "")},
		{"serving", cfg.Serving, cfg.Serving.APIKey != ""},
		{"models", cfg.Models, false},
		{"batchJobs", cfg.BatchJobs, false},
		{"policies", cfg.Policies, false},
	} {
		if j, err := json.Marshal(b.v); err != nil || !emptyObject(string(j)) && string(j) != "[]" {
			errs = append(errs, add(b.k, b.v, b.secret))
		}
	}
	return cm, errors.Join(errs...)
}

// replaceConfig makes the stack's config exactly cm: keys of the project
// namespace that cm no longer has are removed.
func replaceConfig(ctx context.Context, s auto.Stack, cm auto.ConfigMap) error {
	current, err := s.GetAllConfig(ctx)
	if err != nil {
		return err
	}
	var stale []string
	for k := range current {
		if _, keep := cm[k]; !keep && strings.HasPrefix(k, Namespace+":") {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		if err := s.RemoveAllConfig(ctx, stale); err != nil {
			return err
		}
	}
	return s.SetAllConfig(ctx, cm)
}

// Name is the stack's name.
func (s *Stack) Name() string { return s.name }

// events returns a channel for one operation that forwards to OnEvent, and
// finish, which waits until the engine has closed it. An operation that
// failed early (a canceled context, say) may never close it: finish then
// gives up after a short grace instead of blocking the caller.
func (s *Stack) events() (ch chan events.EngineEvent, finish func(opErr error)) {
	ch = make(chan events.EngineEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range ch {
			if s.engine.OnEvent != nil {
				s.engine.OnEvent(s.name, e)
			}
		}
	}()
	return ch, func(opErr error) {
		if opErr == nil {
			<-done
			return
		}
		select {
		case <-done:
		case <-time.After(eventsGrace):
		}
	}
}

// eventsGrace is how long a failed operation's last events may take.
const eventsGrace = 2 * time.Second

func (s *Stack) progress() []io.Writer {
	if s.engine.Progress == nil {
		return nil
	}
	return []io.Writer{s.engine.Progress}
}

// Preview shows what an up would change, by operation.
func (s *Stack) Preview(ctx context.Context) (map[apitype.OpType]int, error) {
	ch, finish := s.events()
	res, err := s.stack.Preview(ctx, optpreview.EventStreams(ch), optpreview.ProgressStreams(s.progress()...), optpreview.Diff())
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: preview: %w", s.name, err)
	}
	return res.ChangeSummary, nil
}

// Up applies the stack and returns its outputs.
func (s *Stack) Up(ctx context.Context) (auto.OutputMap, map[string]int, error) {
	ch, finish := s.events()
	res, err := s.stack.Up(ctx, optup.EventStreams(ch), optup.ProgressStreams(s.progress()...))
	finish(err)
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: up: %w", s.name, err)
	}
	return res.Outputs, changes(res.Summary.ResourceChanges), nil
}

// ErrRenderOnly is returned by Refresh for a stack with renderDir: its
// objects exist only as files, so there is no cluster to read them from.
var ErrRenderOnly = errors.New("the stack renders to files (renderDir): there is no cluster to refresh from")

// Refresh reads the real state of the stack's resources into its state.
func (s *Stack) Refresh(ctx context.Context) (map[string]int, error) {
	if s.renderOnly {
		return nil, fmt.Errorf("stack %s: refresh: %w", s.name, ErrRenderOnly)
	}
	ch, finish := s.events()
	res, err := s.stack.Refresh(ctx, optrefresh.EventStreams(ch), optrefresh.ProgressStreams(s.progress()...))
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: refresh: %w", s.name, err)
	}
	return changes(res.Summary.ResourceChanges), nil
}

// Destroy deletes every resource of the stack (protected ones refuse).
func (s *Stack) Destroy(ctx context.Context) (map[string]int, error) {
	ch, finish := s.events()
	res, err := s.stack.Destroy(ctx, optdestroy.EventStreams(ch), optdestroy.ProgressStreams(s.progress()...))
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: destroy: %w", s.name, err)
	}
	return changes(res.Summary.ResourceChanges), nil
}

// Outputs returns the stack's outputs; secret ones are marked Secret.
func (s *Stack) Outputs(ctx context.Context) (auto.OutputMap, error) {
	out, err := s.stack.Outputs(ctx)
	if err != nil {
		return nil, fmt.Errorf("stack %s: outputs: %w", s.name, err)
	}
	return out, nil
}

func changes(m *map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return *m
}
