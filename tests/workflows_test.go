package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/fleet"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

// workflow is the part of a GitHub Actions workflow these tests read.
type workflow struct {
	Jobs map[string]struct {
		Uses     string            `json:"uses"`
		Needs    any               `json:"needs"`
		If       string            `json:"if"`
		With     map[string]string `json:"with"`
		Secrets  any               `json:"secrets"`
		Strategy struct {
			FailFast    *bool  `json:"fail-fast"`
			MaxParallel any    `json:"max-parallel"`
			Matrix      string `json:"matrix"`
		} `json:"strategy"`
		Steps []struct {
			Name string            `json:"name"`
			Uses string            `json:"uses"`
			Run  string            `json:"run"`
			With map[string]any    `json:"with"`
			Env  map[string]string `json:"env"`
		} `json:"steps"`
	} `json:"jobs"`
}

func readWorkflow(t *testing.T, name string) (workflow, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w, string(b)
}

func needsOf(v any) []string {
	switch n := v.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, x := range n {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// Every fleet workflow plans with stackctl fleet matrix (no stack list
// kept by hand) through fleet-plan, and runs its shards through
// fleet-shard with every secret passed on (each stack's passphrase).
func TestFleetWorkflowsPlanWithStackctl(t *testing.T) {
	t.Parallel()
	_, planText := readWorkflow(t, "fleet-plan.yml")
	if !strings.Contains(planText, "stackctl fleet matrix -op preview -shard-size \"$SHARD_SIZE\" -changed -") ||
		!strings.Contains(planText, `stackctl fleet matrix -op "$OP" -shard-size "$SHARD_SIZE"`) ||
		!strings.Contains(planText, `git diff --name-only "origin/$BASE...HEAD"`) {
		t.Errorf("fleet-plan.yml does not take its matrix from stackctl fleet matrix (the pull request's changed paths for a preview)")
	}
	for wf, op := range map[string]string{"preview.yml": fleet.OpPreview, "up.yml": fleet.OpUp, "drift.yml": fleet.OpDrift} {
		w, text := readWorkflow(t, wf)
		if j := w.Jobs["plan"]; j.Uses != "./.github/workflows/fleet-plan.yml" || j.With["op"] != op {
			t.Errorf("%s: plan job %+v, want fleet-plan.yml with op %s", wf, j, op)
		}
		shards := 0
		for name, j := range w.Jobs {
			if j.Uses != "./.github/workflows/fleet-shard.yml" {
				continue
			}
			shards++
			if j.With["op"] != op || j.Secrets != "inherit" || !slices.Contains(needsOf(j.Needs), "plan") {
				t.Errorf("%s: job %s: op %q, secrets %v, needs %v", wf, name, j.With["op"], j.Secrets, j.Needs)
			}
		}
		if shards == 0 || strings.Contains(text, "stack: [") {
			t.Errorf("%s: %d shard jobs, or a stack list by hand", wf, shards)
		}
	}
	// the shard job: its matrix is the plan's, fail-fast off (a shard's
	// failure must not stop the others' ups midway), parallelism a setting
	shard, _ := readWorkflow(t, "fleet-shard.yml")
	j := shard.Jobs["shard"]
	if j.Strategy.Matrix != "${{ fromJSON(inputs.plan).matrix }}" || j.Strategy.FailFast == nil || *j.Strategy.FailFast ||
		j.Strategy.MaxParallel != "${{ fromJSON(vars.FLEET_MAX_PARALLEL || '20') }}" {
		t.Errorf("fleet-shard strategy %+v", j.Strategy)
	}
}

// The toolchain and stackctl are built once (fleet-plan, cached per
// toolchain version and per commit) and restored by every shard job, which
// compiles nothing: the same paths and keys, a miss is a failure.
func TestShardJobsRestoreNotRebuild(t *testing.T) {
	t.Parallel()
	plan, _ := readWorkflow(t, "fleet-plan.yml")
	shard, shardText := readWorkflow(t, "fleet-shard.yml")
	saved := map[string]string{} // key -> path
	for _, s := range plan.Jobs["plan"].Steps {
		if strings.HasPrefix(s.Uses, "actions/cache") {
			saved[s.With["key"].(string)] = s.With["path"].(string)
		}
	}
	restored := 0
	for _, s := range shard.Jobs["shard"].Steps {
		if !strings.HasPrefix(s.Uses, "actions/cache") {
			continue
		}
		if !strings.HasPrefix(s.Uses, "actions/cache/restore@") || s.With["fail-on-cache-miss"] != true {
			t.Errorf("shard cache step %s: want a restore that fails on a miss", s.Uses)
		}
		key, _ := s.With["key"].(string)
		if path, ok := saved[key]; !ok || path != s.With["path"] {
			t.Errorf("shard restores %q (%v), which fleet-plan does not save with those paths", key, s.With["path"])
		}
		restored++
	}
	if restored != 2 || len(saved) != 2 {
		t.Errorf("%d caches restored, %d saved; want the toolchain and the binaries", restored, len(saved))
	}
	for _, bad := range []string{"go run", "go build", "go install", "setup-go"} {
		if strings.Contains(shardText, bad) {
			t.Errorf("fleet-shard.yml compiles (%q)", bad)
		}
	}
	// the program runs inline in the restored stackctl (Automation API)
	if !strings.Contains(shardText, `.fleet-bin/stackctl fleet "$OP" -stacks "$STACKS"`) {
		t.Error("the shard job does not run the restored stackctl")
	}
}

// A rollout goes out wave by wave, in fleet.Waves order: each wave's job
// needs the plan and every wave before it, runs only when none of them
// failed or was cancelled (a skipped, empty wave does not stop the next),
// in the wave's own environment; the report needs them all and fails on a
// failure or on a stack left out.
func TestRolloutWavesChain(t *testing.T) {
	t.Parallel()
	w, _ := readWorkflow(t, "up.yml")
	var before []string
	for i, wave := range fleet.Waves() {
		name := "wave-" + wave
		if wave == fleet.Canary {
			name = fleet.Canary
		}
		j, ok := w.Jobs[name]
		if !ok {
			t.Fatalf("up.yml has no job %s for wave %s", name, wave)
		}
		if got, want := needsOf(j.Needs), append([]string{"plan"}, before...); !slices.Equal(got, want) {
			t.Errorf("%s needs %v, want %v", name, got, want)
		}
		if j.With["wave"] != wave || j.With["environment"] != "fleet-"+name ||
			!strings.Contains(j.With["plan"], "fromJSON(needs.plan.outputs.plan)") || !strings.Contains(j.If, ".count > 0") {
			t.Errorf("%s: with %v, if %q", name, j.With, j.If)
		}
		if i > 0 {
			for _, want := range []string{"always()", "needs.plan.result == 'success'", "!contains(needs.*.result, 'failure')", "!contains(needs.*.result, 'cancelled')"} {
				if !strings.Contains(j.If, want) {
					t.Errorf("%s: if %q lacks %q: a failure before it would not stop it", name, j.If, want)
				}
			}
		}
		before = append(before, name)
	}
	r := w.Jobs["report"]
	if got := needsOf(r.Needs); !slices.Equal(got, append([]string{"plan"}, before...)) || !strings.Contains(r.If, "always()") {
		t.Errorf("report needs %v, if %q", got, r.If)
	}
	var run string
	for _, s := range r.Steps {
		run += s.Run
	}
	if !strings.Contains(run, "stackctl fleet report -planned plan.json -check") {
		t.Errorf("the rollout's report does not name the stacks left out or fail on them: %q", run)
	}
}

// The pull request gets one comment for the fleet: found by the report's
// own marker and edited in place, created only when there is none.
func TestPreviewCommentUpdatedInPlace(t *testing.T) {
	t.Parallel()
	w, _ := readWorkflow(t, "preview.yml")
	j := w.Jobs["comment"]
	var post string
	var marker string
	for _, s := range j.Steps {
		if strings.Contains(s.Run, "gh api") {
			post, marker = s.Run, s.Env["MARKER"]
		}
	}
	if marker != fleet.Marker {
		t.Errorf("the workflow looks for %q, the report starts with %q", marker, fleet.Marker)
	}
	for _, want := range []string{`select(.body | startswith($m))`, `gh api -X PATCH "repos/$REPO/issues/comments/$id"`, "gh pr comment"} {
		if !strings.Contains(post, want) {
			t.Errorf("comment step lacks %q:\n%s", want, post)
		}
	}
	if strings.Index(post, "PATCH") > strings.Index(post, "gh pr comment") {
		t.Error("a new comment comes before the edit of the existing one")
	}
}

// The shard jobs can reach an Entra ID cluster unattended: they sign in to
// Azure and install kubelogin, which the converted kubeconfig runs
// (aks.login); the plan installs the one azure-native plugin every Azure
// resource of a stack is pinned to, and the random plugin for a generated
// API key.
func TestWorkflowsReachEntraClusters(t *testing.T) {
	t.Parallel()
	_, plan := readWorkflow(t, "fleet-plan.yml")
	_, shard := readWorkflow(t, "fleet-shard.yml")
	for _, c := range []struct{ text, want string }{
		{shard, "uses: azure/login@"},
		{shard, "uses: azure/use-kubelogin@"},
		{shard, "run: .ci/env.sh --github"},
		{plan, "pulumi plugin install resource azure-native " + aks.AzureNativeVersion},
		{plan, "pulumi plugin install resource random " + preflight.RandomVersion},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("lacks %q", c.want)
		}
	}
}

// A rollout publishes each GitOps stack that went up (and only those) to
// the platform repository, with the restored stackctl.
func TestRolloutPublishesRenders(t *testing.T) {
	t.Parallel()
	_, shard := readWorkflow(t, "fleet-shard.yml")
	for _, want := range []string{`select((.error // "") == "")`, `.ci/publish-render.sh "$stack"`, "STACKCTL: .fleet-bin/stackctl"} {
		if !strings.Contains(shard, want) {
			t.Errorf("fleet-shard.yml lacks %q", want)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", ".ci", "publish-render.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`stackctl render -stack "$STACK"`, `cp -R "$GITOPS_RENDER_DIR"/. "$platform/$GITOPS_PATH/"`, "gh pr create"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("publish-render.sh lacks %q", want)
		}
	}
}

// Every action the workflows use is pinned to a commit, not a tag its
// owner can move; the ones the shared assets carry are pinned to the
// commits their tags resolved to there (../shared/actions/README.md).
func TestActionsArePinnedToCommits(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(pulumitest.SharedDir(t), "actions", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// "| actions/checkout | v4 | <sha> |" rows, and "**actions/upload-artifact@v4** (<sha>)"
	known := map[string]string{}
	for _, m := range regexp.MustCompile(`\| (\S+/\S+)(?: \([^)]*\))? \| v\d+ \| ([0-9a-f]{40}) \|`).FindAllStringSubmatch(string(readme), -1) {
		known[m[1]] = m[2]
	}
	for _, m := range regexp.MustCompile(`\*\*(\S+/\S+)@v\d+\*\* \(([0-9a-f]{40})\)`).FindAllStringSubmatch(string(readme), -1) {
		known[m[1]] = m[2]
	}
	if len(known) < 5 {
		t.Fatalf("read %d pinned actions from the shared README, want checkout, cache, setup-go and the artifact actions: %v", len(known), known)
	}
	pinned := regexp.MustCompile(`^([^@/]+/[^@/]+)(/[^@]+)?@([0-9a-f]{40})$`)
	files, _ := filepath.Glob(filepath.Join("..", ".github", "workflows", "*.yml"))
	checked := 0
	for _, f := range files {
		w, _ := readWorkflow(t, filepath.Base(f))
		for name, j := range w.Jobs {
			uses := []string{j.Uses}
			for _, s := range j.Steps {
				uses = append(uses, s.Uses)
			}
			for _, u := range uses {
				if u == "" || strings.HasPrefix(u, "./") {
					continue
				}
				checked++
				m := pinned.FindStringSubmatch(u)
				if m == nil {
					t.Errorf("%s job %s uses %s: not pinned to a commit", filepath.Base(f), name, u)
					continue
				}
				if want, ok := known[m[1]]; ok && m[3] != want {
					t.Errorf("%s job %s uses %s at %s; its tag resolves to %s", filepath.Base(f), name, m[1], m[3], want)
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d uses of actions, want every one of the workflows'", checked)
	}
}

// The shard jobs deploy the checksummed charts: the bundle is fetched and
// verified against .ci/shared-assets.sha256, and the program pointed at
// its charts, before any stack runs.
func TestShardsDeployTheChecksummedCharts(t *testing.T) {
	t.Parallel()
	shard, _ := readWorkflow(t, "fleet-shard.yml")
	bundle, run := -1, -1
	for i, s := range shard.Jobs["shard"].Steps {
		if strings.Contains(s.Run, ".ci/shared-assets.sh verify") && strings.Contains(s.Run, "GPU_NODE_POOLS_CHART_DIR=") && strings.Contains(s.Run, "$GITHUB_ENV") {
			bundle = i
		}
		if strings.Contains(s.Run, ".fleet-bin/stackctl fleet") {
			run = i
		}
	}
	if bundle < 0 || run < 0 || bundle > run {
		t.Errorf("the verified bundle's charts (step %d) must come before the stacks run (step %d)", bundle, run)
	}
}
