package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// fleetDir is a project with the repository's Pulumi.yaml and a stack file
// per name, each with the fleet block given ("" for none).
func fleetDir(t *testing.T, stacks map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, block := range stacks {
		file := "config:\n  gpu-node-pools:target: natron\n" + block
		if err := os.WriteFile(filepath.Join(dir, "Pulumi."+name+".yaml"), []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// stackctl fleet matrix: an up goes out in waves, by the stack files'
// fleet.wave (the last wave without one), sharded; a preview of a change
// to two stack files is those two, of a code change every stack.
func TestFleetMatrix(t *testing.T) {
	t.Parallel()
	dir := fleetDir(t, map[string]string{
		"a1": "  gpu-node-pools:fleet:\n    wave: canary\n",
		"b2": "  gpu-node-pools:fleet:\n    wave: \"1\"\n",
		"c3": "",
		"d4": "  gpu-node-pools:fleet:\n    wave: \"1\"\n",
		"e5": "",
	})
	var out, errs bytes.Buffer
	if code := run([]string{"fleet", "matrix", "-op", "up", "-shard-size", "1"}, dir, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var waves map[string]fleet.Wave
	if err := json.Unmarshal(out.Bytes(), &waves); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	got := map[string][]string{}
	for w, v := range waves {
		for _, s := range v.Matrix.Include {
			got[w] = append(got[w], s.Stacks)
		}
	}
	want := map[string][]string{"canary": {"a1"}, "1": {"b2", "d4"}, "3": {"c3", "e5"}}
	if len(got) != len(want) || strings.Join(got["1"], ",") != "b2,d4" || strings.Join(got["3"], ",") != "c3,e5" || got["canary"][0] != "a1" || waves["2"].Count != 0 {
		t.Errorf("waves %v, want %v", got, want)
	}
	for _, tc := range []struct{ changed, want string }{
		{"Pulumi.b2.yaml\nPulumi.e5.yaml\n", "b2 e5"},
		{"Pulumi.b2.yaml\ncomponents/serving/values.go\n", "a1 b2 c3 d4 e5"},
	} {
		out.Reset()
		if code := run([]string{"fleet", "matrix", "-changed", "-"}, dir, strings.NewReader(tc.changed), &out, &errs); code != 0 {
			t.Fatalf("exit %d: %s", code, errs.String())
		}
		var w fleet.Wave
		if err := json.Unmarshal(out.Bytes(), &w); err != nil || w.Count != len(strings.Fields(tc.want)) || w.Matrix.Include[0].Stacks != tc.want {
			t.Errorf("%q: %s (%v)", tc.changed, out.String(), err)
		}
	}
	// A drift run: every stack, waves or not, in shards.
	out.Reset()
	if code := run([]string{"fleet", "matrix", "-op", "drift", "-shard-size", "2"}, dir, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	var drift fleet.Wave
	if err := json.Unmarshal(out.Bytes(), &drift); err != nil || drift.Count != 5 || len(drift.Matrix.Include) != 3 || drift.Matrix.Include[2].Stacks != "d4 e5" {
		t.Errorf("drift matrix: %s (%v)", out.String(), err)
	}
	if code := run([]string{"fleet", "matrix", "-op", "drift", "-changed", "-"}, dir, strings.NewReader("x\n"), &out, &errs); code != 1 || !strings.Contains(errs.String(), "--changed is for --op preview") {
		t.Errorf("drift with --changed: exit %d: %s", code, errs.String())
	}
}

// A stack file whose fleet block is wrong is named with the key and what
// it may be, every such stack at once, and nothing is printed.
func TestFleetMatrixRefuses(t *testing.T) {
	t.Parallel()
	dir := fleetDir(t, map[string]string{
		"a1": "  gpu-node-pools:fleet:\n    wave: \"7\"\n",
		"b2": "  gpu-node-pools:fleet:\n    waves: canary\n",
		"c3": "",
	})
	var out, errs bytes.Buffer
	if code := run([]string{"fleet", "matrix", "-op", "up"}, dir, nil, &out, &errs); code != 1 || out.Len() != 0 ||
		!strings.Contains(errs.String(), `a1: gpu-node-pools:fleet.wave: Unsupported value: "7": must be one of canary, 1, 2, 3`) ||
		!strings.Contains(errs.String(), `b2: gpu-node-pools:fleet: json: unknown field "waves"`) {
		t.Errorf("exit %d, out %q, err:\n%s", code, out.String(), errs.String())
	}
	errs.Reset()
	if code := run([]string{"fleet", "matrix", "-op", "rollout"}, fleetDir(t, map[string]string{"a": ""}), nil, &out, &errs); code != 1 || !strings.Contains(errs.String(), "--op: must be one of preview, up, drift") {
		t.Errorf("exit %d: %s", code, errs.String())
	}
}

// stackctl fleet report merges the shard jobs' files: Markdown with the
// marker the workflow updates its comment by, or JSON with the totals; a
// file that is no report is named.
func TestFleetReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, r fleet.ShardReport) string {
		b, _ := json.Marshal(r)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("shard-1.json", fleet.ShardReport{Op: "preview", Shard: 1, Stacks: []fleet.StackResult{{Stack: "acme", Changes: map[string]int{"create": 3}}}})
	b := write("shard-2.json", fleet.ShardReport{Op: "preview", Shard: 2, Stacks: []fleet.StackResult{{Stack: "globex", Error: "boom\nmore"}}})
	var out, errs bytes.Buffer
	if code := run([]string{"fleet", "report", a, b}, dir, nil, &out, &errs); code != 0 ||
		!strings.HasPrefix(out.String(), fleet.Marker+"\n**Fleet preview**: 2 stacks, 1 failed, 1 with changes, 0 unchanged.") {
		t.Errorf("exit %d: %s%s", code, out.String(), errs.String())
	}
	out.Reset()
	if code := run([]string{"fleet", "report", "-format", "json", a, b}, dir, nil, &out, &errs); code != 0 || !strings.Contains(out.String(), `"failed": 1`) {
		t.Errorf("exit %d: %s%s", code, out.String(), errs.String())
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte("not json"), 0o644)
	errs.Reset()
	if code := run([]string{"fleet", "report", a, bad}, dir, nil, &out, &errs); code != 1 || !strings.Contains(errs.String(), "bad.json: not a shard report") {
		t.Errorf("exit %d: %s", code, errs.String())
	}
}

// A rollout's report, given the matrix it was cut from, names the stacks
// that did not get the change; a drift run's report gives one issue
// action a line; the shard commands refuse a bad flag before any engine
// runs.
func TestFleetReportPlannedAndIssues(t *testing.T) {
	t.Parallel()
	dir := fleetDir(t, map[string]string{"acme": "  gpu-node-pools:fleet: {wave: canary}\n", "globex": "  gpu-node-pools:fleet: {wave: \"1\"}\n", "initech": ""})
	var matrix, out, errs bytes.Buffer
	if code := run([]string{"fleet", "matrix", "-op", "up", "-shard-size", "1"}, dir, nil, &matrix, &errs); code != 0 {
		t.Fatalf("matrix: %s", errs.String())
	}
	planned := filepath.Join(dir, "matrix.json")
	_ = os.WriteFile(planned, matrix.Bytes(), 0o644)
	rep := filepath.Join(dir, "shard-1.json")
	b, _ := json.Marshal(fleet.ShardReport{Op: "up", Wave: "canary", Shard: 1, Stacks: []fleet.StackResult{{Stack: "acme", Error: "stack acme: up: boom"}}})
	_ = os.WriteFile(rep, b, 0o644)
	if code := run([]string{"fleet", "report", "-planned", planned, rep}, dir, nil, &out, &errs); code != 0 ||
		!strings.Contains(out.String(), "**2 stacks did not get the change** (a wave before theirs failed or was not approved): globex, initech") {
		t.Errorf("exit %d: %s%s", code, out.String(), errs.String())
	}
	// -check: the rollout's report job fails on a failure or a stack left
	// out, after printing; a run none of whose shards reported is all left out.
	for _, args := range [][]string{{"-planned", planned, rep}, {"-planned", planned}} {
		out.Reset()
		errs.Reset()
		if code := run(append([]string{"fleet", "report", "-check"}, args...), dir, nil, &out, &errs); code != 1 || !strings.Contains(out.String(), "did not get the change") ||
			!strings.Contains(errs.String(), "did not run") {
			t.Errorf("-check %v: exit %d: %s%s", args, code, out.String(), errs.String())
		}
	}
	// a preview's plan (one matrix, no waves) is read the same way
	var pm bytes.Buffer
	if code := run([]string{"fleet", "matrix", "-op", "preview"}, dir, nil, &pm, &errs); code != 0 {
		t.Fatalf("preview matrix: %s", errs.String())
	}
	previewPlan := filepath.Join(dir, "preview.json")
	_ = os.WriteFile(previewPlan, pm.Bytes(), 0o644)
	out.Reset()
	if code := run([]string{"fleet", "report", "-planned", previewPlan}, dir, nil, &out, &errs); code != 0 ||
		!strings.Contains(out.String(), "**3 stacks did not get the change**") {
		t.Errorf("preview plan: exit %d: %s%s", code, out.String(), errs.String())
	}
	drift := filepath.Join(dir, "drift-1.json")
	b, _ = json.Marshal(fleet.ShardReport{Op: "drift", Shard: 1, Stacks: []fleet.StackResult{
		{Stack: "acme", Changes: map[string]int{"update": 1}}, {Stack: "globex", Changes: map[string]int{"same": 3}}}})
	_ = os.WriteFile(drift, b, 0o644)
	if code := run([]string{"fleet", "report", "-check", drift}, dir, nil, &out, &errs); code != 0 {
		t.Errorf("-check on a clean run: exit %d: %s", code, errs.String())
	}
	out.Reset()
	if code := run([]string{"fleet", "report", "-format", "issues", drift}, dir, nil, &out, &errs); code != 0 {
		t.Fatalf("issues: %s", errs.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"title":"Drift: stack acme","state":"open"`) || !strings.Contains(lines[1], `"state":"closed"`) {
		t.Errorf("issues:\n%s", out.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "up", "-parallel", "0", "-stacks", "acme"}, "--parallel: must be >= 1, got 0"},
		{[]string{"fleet", "preview"}, "shard: stacks: want at least one stack"},
		{[]string{"fleet", "recover", "-stack", "acme"}, "check that the run named in the lock is gone"},
		{[]string{"fleet", "rollback"}, "fleet: want a command: matrix, preview, up, drift, report or recover"},
		{[]string{"fleet", "report", "-format", "xml", rep}, "--format: must be markdown, json or issues"},
		{[]string{"fleet", "report"}, "want the shard reports' files"},
	} {
		errs.Reset()
		if code := run(c.args, dir, nil, &out, &errs); code == 0 || !strings.Contains(errs.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want %q", c.args, code, errs.String(), c.want)
		}
	}
}

// A job whose secrets variable is not the JSON object toJSON(secrets)
// gives stops at once, naming the variable, and runs no stack (else each
// would fail alone on a passphrase it never got); unset, the environment
// alone is read.
func TestFleetSecretsMustBeJSON(t *testing.T) {
	dir := fleetDir(t, map[string]string{"acme": ""})
	out := t.TempDir()
	for _, tc := range []struct{ cmd, value string }{
		{"preview", "{not json"},
		{"recover", `["a list"]`},
		{"up", `{"PULUMI_CONFIG_PASSPHRASE_ACME": 7}`},
	} {
		t.Setenv(FleetSecretsEnv, tc.value)
		args := []string{"fleet", tc.cmd, "-stacks", "acme", "-out", out}
		if tc.cmd == "recover" {
			args = []string{"fleet", "recover", "-stack", "acme", "-yes"}
		}
		var stdout, errs bytes.Buffer
		if code := run(args, dir, nil, &stdout, &errs); code == 0 || !strings.Contains(errs.String(), FleetSecretsEnv+": not a JSON object") {
			t.Errorf("%s with %s=%s: exit %d, %s", tc.cmd, FleetSecretsEnv, tc.value, code, errs.String())
		}
		if _, err := os.Stat(filepath.Join(out, "shard-1.json")); err == nil {
			t.Errorf("%s: a report was written: stacks ran", tc.cmd)
		}
	}
	t.Setenv(FleetSecretsEnv, `{"PULUMI_CONFIG_PASSPHRASE_ACME": "from-the-secrets"}`)
	getenv, err := fleetGetenv()
	if err != nil || getenv("PULUMI_CONFIG_PASSPHRASE_ACME") != "from-the-secrets" {
		t.Errorf("a JSON object of secrets: %v, %q", err, getenv("PULUMI_CONFIG_PASSPHRASE_ACME"))
	}
}
