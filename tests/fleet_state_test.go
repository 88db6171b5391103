package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"

	"github.com/natron/gpu-node-pools/internal/testkit/azurite"
	"github.com/natron/gpu-node-pools/internal/testkit/fleettest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// blobFleet is a fleet of stack files in a project directory with its
// state in an Azurite container, as the fleet's jobs reach Azure Blob
// Storage: the same gocloud.dev driver, Pulumi's own stack locks.
type blobFleet struct {
	az      *azurite.Server
	project string
	stacks  []string
	engine  automation.Engine
	env     map[string]string // the jobs' environment: each stack's passphrase
}

func newBlobFleet(t testing.TB, n int) *blobFleet {
	t.Helper()
	root := pulumitest.PulumiRoot(t)
	az := azurite.Start(t, "fleet")
	stacks := fleettest.Names(n)
	f := &blobFleet{az: az, stacks: stacks, project: stacktest.Project(t, fleettest.Files(t, stacks)), env: fleettest.Env(stacks)}
	home := pulumitest.EngineEnv(t, root, "")["PULUMI_HOME"]
	env := map[string]string{"PULUMI_HOME": home}
	for k, v := range az.Env {
		env[k] = v
	}
	f.engine = automation.Engine{
		BackendURL: az.BackendURL(), PulumiRoot: root, WorkDir: t.TempDir(), Env: env,
		ChartDir: filepath.Join(pulumitest.SharedDir(t), "charts"),
	}
	return f
}

// shard runs op over stacks as a shard job would.
func (f *blobFleet) shard(ctx context.Context, t testing.TB, op string, n int, stacks []string, tweak func(*automation.Engine)) fleet.ShardReport {
	t.Helper()
	rep, err := automation.RunShard(ctx, automation.ShardRun{
		Op: op, Shard: n, Stacks: stacks, ProjectDir: f.project, Parallel: 2, LogDir: t.TempDir(),
		Engine: func(stack string) (automation.Engine, error) {
			e, err := f.engine.ForStack(f.project, stack, func(k string) string { return f.env[k] })
			if tweak != nil {
				tweak(&e)
			}
			return e, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// stateBlob is where the DIY backend keeps a stack's checkpoint.
func stateBlob(stack string) string {
	return ".pulumi/stacks/gpu-node-pools/" + stack + ".json"
}

// checkpoint is a stack's state as the container holds it.
type checkpoint struct {
	Checkpoint struct {
		Latest struct {
			SecretsProviders struct {
				State struct{ Salt string } `json:"state"`
			} `json:"secrets_providers"`
			Resources         []struct{ URN string } `json:"resources"`
			PendingOperations []struct {
				Resource struct{ URN string } `json:"resource"`
				Type     string               `json:"type"`
			} `json:"pending_operations"`
		} `json:"latest"`
	} `json:"checkpoint"`
}

func (f *blobFleet) checkpoint(t *testing.T, stack string) checkpoint {
	t.Helper()
	var c checkpoint
	if err := json.Unmarshal(f.az.Read(t, stateBlob(stack)), &c); err != nil {
		t.Fatalf("%s: %v", stateBlob(stack), err)
	}
	return c
}

func failures(rep fleet.ShardReport) map[string]string {
	out := map[string]string{}
	for _, r := range rep.Stacks {
		if r.Error != "" {
			out[r.Stack] = r.Error
		}
	}
	return out
}

// Two shard jobs at once on one container, each up-ing its own stacks
// two at a time: every stack succeeds, every state is in the container
// with its resources, no lock is left, and a preview of the whole fleet
// then finds nothing to change. A stack whose secrets its job cannot
// decrypt fails alone: the rest of its shard goes on.
func TestFleetShardsShareBlobState(t *testing.T) {
	t.Parallel()
	f := newBlobFleet(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	f.env[automation.PassphraseEnv(f.stacks[4])] = "not-" + fleettest.Passphrase(f.stacks[4])

	var wg sync.WaitGroup
	reps := make([]fleet.ShardReport, 2)
	for i, part := range [][]string{f.stacks[:2], f.stacks[2:]} {
		wg.Go(func() { reps[i] = f.shard(ctx, t, fleet.OpUp, i+1, part, nil) })
	}
	wg.Wait()
	bad := f.stacks[4]
	for _, rep := range reps {
		for _, r := range rep.Stacks {
			t.Logf("shard %d: %s: %v in %.0f s %s", rep.Shard, r.Stack, r.Changes, r.Seconds, fleet.FirstLine(r.Error))
			switch {
			case r.Stack == bad:
				if want := automation.PassphraseEnv(bad) + " does not decrypt the secrets of Pulumi." + bad + ".yaml"; !strings.HasPrefix(r.Error, "stack "+bad+": "+want) {
					t.Errorf("%s: want its own decrypt failure, naming it and the passphrase; got %q", bad, r.Error)
				}
			case r.Error != "":
				t.Errorf("%s failed beside the broken stack: %s", r.Stack, r.Error)
			case r.Changes["create"] < 10:
				t.Errorf("%s: up created %v", r.Stack, r.Changes)
			}
		}
	}
	for _, s := range f.stacks[:4] {
		if n := len(f.checkpoint(t, s).Checkpoint.Latest.Resources); n < 10 {
			t.Errorf("%s: %d resources in its state in the container", s, n)
		}
		// the stack file's relative renderDir is the project's (the
		// program resolves it), not the job's working directory
		if files, _ := filepath.Glob(filepath.Join(f.project, "rendered", s, "workload", "*", "*.yaml")); len(files) == 0 {
			t.Errorf("%s: nothing rendered under the project's rendered/%s/workload", s, s)
		}
		if _, err := os.Stat(filepath.Join("rendered", s)); err == nil {
			t.Errorf("%s: rendered in the test's working directory", s)
		}
	}
	if locks := f.az.Blobs(t, ".pulumi/locks/"); len(locks) > 0 {
		t.Errorf("locks left behind: %v", locks)
	}
	rep := f.shard(ctx, t, fleet.OpPreview, 1, f.stacks[:4], nil)
	if fails := failures(rep); len(fails) > 0 {
		t.Fatalf("preview after up: %v", fails)
	}
	for _, r := range rep.Stacks {
		pulumitest.NoChanges(t, r.Stack+": preview after up", r.Changes)
	}
}

// A second operation on a stack another job holds fails at once, naming
// the stack and the lock's holder, while the first runs on; the state the
// first writes is whole afterwards.
func TestFleetLockedStackFailsAtOnce(t *testing.T) {
	t.Parallel()
	f := newBlobFleet(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	stack := f.stacks[0]
	started := make(chan struct{})
	var once sync.Once
	upDone := make(chan fleet.ShardReport, 1)
	go func() {
		upDone <- f.shard(ctx, t, fleet.OpUp, 1, f.stacks, func(e *automation.Engine) {
			e.OnEvent = func(_ string, ev events.EngineEvent) {
				if ev.ResourcePreEvent != nil {
					once.Do(func() { close(started) })
				}
			}
		})
	}()
	select {
	case <-started:
	case rep := <-upDone:
		t.Fatalf("up ended before it started a resource: %+v", rep)
	}
	// a preview takes no lock in a DIY backend; an up does
	second := f.shard(ctx, t, fleet.OpUp, 2, f.stacks, nil)
	select {
	case <-upDone:
		t.Error("the second operation waited for the first to end")
	default:
	}
	msg := failures(second)[stack]
	t.Log(msg)
	for _, want := range []string{"stack " + stack, "currently locked", ".pulumi/locks/", stack, "created by"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the locked stack's error lacks %q: %s", want, msg)
		}
	}
	first := <-upDone
	if fails := failures(first); len(fails) > 0 {
		t.Fatalf("the up holding the lock failed: %v", fails)
	}
	if n := len(f.checkpoint(t, stack).Checkpoint.Latest.Resources); n < 10 {
		t.Errorf("%d resources in the state after the contended up", n)
	}
	again := f.shard(ctx, t, fleet.OpPreview, 2, f.stacks, nil)
	if fails := failures(again); len(fails) > 0 {
		t.Fatalf("preview after the lock was released: %v", fails)
	}
	pulumitest.NoChanges(t, "preview after the contended up", again.Stacks[0].Changes)
}

// killCLI kills (SIGKILL, no chance to clean up) the pulumi CLI this
// process runs for stack's up, as a runner that is lost or a job that is
// cancelled hard would.
func killCLI(t *testing.T, stack string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join(p, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		cmdline, _ := os.ReadFile(filepath.Join(p, "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) || filepath.Base(args[0]) != "pulumi" ||
			!slices.Contains(args, "up") || !slices.Contains(args, stack) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no pulumi up of %s runs under this process", stack)
}

// An up killed halfway leaves its lock and a part of its resources; the
// next up is refused, naming the lock. automation.Recover (stackctl fleet
// recover) removes the lock and clears the pending operations, keeping
// the resources; the next up then finishes the change and a preview finds
// nothing left to do.
func TestFleetKilledUpRecovers(t *testing.T) {
	t.Parallel()
	f := newBlobFleet(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	stack := f.stacks[0]
	var done atomic.Int32
	var once sync.Once
	first := f.shard(ctx, t, fleet.OpUp, 1, f.stacks, func(e *automation.Engine) {
		e.OnEvent = func(_ string, ev events.EngineEvent) {
			if ev.ResOutputsEvent != nil && done.Add(1) == 20 {
				once.Do(func() { killCLI(t, stack) })
			}
		}
	})
	if failures(first)[stack] == "" {
		t.Fatalf("the killed up succeeded: %+v", first)
	}
	killed := f.checkpoint(t, stack).Checkpoint.Latest
	if len(killed.Resources) < 10 {
		t.Fatalf("the killed up left %d resources in the state; want the part it made", len(killed.Resources))
	}
	if locks := f.az.Blobs(t, ".pulumi/locks/"); len(locks) != 1 {
		t.Fatalf("the killed up left locks %v, want its one", locks)
	}
	t.Logf("killed after %d resources: %d in the state, %d pending operations", done.Load(), len(killed.Resources), len(killed.PendingOperations))
	if msg := failures(f.shard(ctx, t, fleet.OpUp, 1, f.stacks, nil))[stack]; !strings.Contains(msg, "currently locked") {
		t.Fatalf("an up after the kill: want the lock named, got %q", msg)
	}

	e, err := f.engine.ForStack(f.project, stack, func(k string) string { return f.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s, err := automation.OpenFromFile(ctx, f.project, stack, e)
	if err != nil {
		t.Fatal(err)
	}
	r, err := automation.Recover(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pending) != len(killed.PendingOperations) || r.Resources < len(killed.Resources) {
		t.Errorf("recover: %d pending (the state had %d), %d resources kept (the state had %d)", len(r.Pending), len(killed.PendingOperations), r.Resources, len(killed.Resources))
	}
	if left := f.checkpoint(t, stack).Checkpoint.Latest.PendingOperations; len(left) > 0 {
		t.Errorf("pending operations left: %v", left)
	}
	if locks := f.az.Blobs(t, ".pulumi/locks/"); len(locks) > 0 {
		t.Errorf("locks left: %v", locks)
	}
	again := f.shard(ctx, t, fleet.OpUp, 1, f.stacks, nil)
	if fails := failures(again); len(fails) > 0 {
		t.Fatalf("up after recovery: %v", fails)
	}
	if again.Stacks[0].Changes["create"] == 0 || again.Stacks[0].Changes["same"] < len(killed.Resources)-len(killed.PendingOperations)-1 {
		t.Errorf("up after recovery: %v; want the rest created and what the killed up made kept", again.Stacks[0].Changes)
	}
	preview := f.shard(ctx, t, fleet.OpPreview, 1, f.stacks, nil)
	pulumitest.NoChanges(t, "preview after the recovered up", preview.Stacks[0].Changes)
}

// A new customer's stack file has no secrets and so no encryptionsalt:
// the first job's up makes the stack's secrets provider in its own work
// directory and records its salt in the state, and nothing is written
// back to the project's file. A later job on a fresh runner (another work
// directory and Pulumi home, the file still without a salt) must find the
// stack as the first left it: its preview and up succeed and change
// nothing, the state keeps the first salt, and the project's file is
// still the customer's.
func TestFleetStackWithoutSaltAcrossJobs(t *testing.T) {
	t.Parallel()
	f := newBlobFleet(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	stack := f.stacks[1] // an odd stack: no model, so no storage keys
	path := filepath.Join(f.project, "Pulumi."+stack+".yaml")
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(file), "\n") {
		if !strings.Contains(line, "serving:") && !strings.Contains(line, "apiKey:") && !strings.HasPrefix(line, "encryptionsalt:") {
			kept = append(kept, line)
		}
	}
	bare := strings.Join(kept, "")
	if strings.Contains(bare, "secure:") || strings.Contains(bare, "encryptionsalt") {
		t.Fatalf("the stack file still has secrets:\n%s", bare)
	}
	if err := os.WriteFile(path, []byte(bare), 0o644); err != nil {
		t.Fatal(err)
	}
	first := f.shard(ctx, t, fleet.OpUp, 1, []string{stack}, nil)
	if fails := failures(first); len(fails) > 0 {
		t.Fatalf("first up: %v", fails)
	}
	state := f.checkpoint(t, stack).Checkpoint.Latest
	if n := len(state.Resources); n < 10 {
		t.Fatalf("%d resources in the state after the first up", n)
	}
	salt := state.SecretsProviders.State.Salt
	if salt == "" {
		t.Fatal("the first up left no passphrase salt in the state")
	}
	if after, _ := os.ReadFile(path); string(after) != bare {
		t.Errorf("the job wrote to the project's stack file:\n%s", after)
	}
	// a fresh runner: another work directory and Pulumi home
	f.engine.WorkDir = t.TempDir()
	f.engine.Env["PULUMI_HOME"] = pulumitest.EngineEnv(t, f.engine.PulumiRoot, "")["PULUMI_HOME"]
	for _, op := range []string{fleet.OpPreview, fleet.OpUp} {
		rep := f.shard(ctx, t, op, 2, []string{stack}, nil)
		if fails := failures(rep); len(fails) > 0 {
			t.Fatalf("%s on a fresh runner: %v", op, fails)
		}
		pulumitest.NoChanges(t, op+" on a fresh runner", rep.Stacks[0].Changes)
	}
	// one key for the stack's life: a later secret (a key the customer
	// adds, a generated one) is read by every job after
	if got := f.checkpoint(t, stack).Checkpoint.Latest.SecretsProviders.State.Salt; got != salt {
		t.Errorf("the fresh runner's up changed the stack's salt from %s to %s", salt, got)
	}
}
