package tests

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// BenchmarkFleetShards previews shards of 5, 10 and 20 stacks out of a
// generated fleet of 200 customers (fleettest: one to three pools of
// varied profiles and bounds, a vLLM model with its weight store on every
// other stack, every wave, each stack its own passphrase), through the
// real engine with state in Azurite, as a shard job does (four stacks at a
// time; the program runs inline, in the process). Each shard is fresh
// stacks; one untimed preview warms the plugins first. It reports
// the seconds per stack at each size, the marginal cost of one more stack
// in a shard, a shard job's start cost (the toolchain cache's restore,
// measured as its extraction, plus the toolchain's setup), and the projected wall
// time for 200 and 1,000 stacks on 20 and 50 runners.
//
// go test ./tests -run '^$' -bench FleetShards -benchtime 1x
func BenchmarkFleetShards(b *testing.B) {
	const fleetSize = 200
	f := newBlobFleet(b, fleetSize)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	preview := func(part []string) time.Duration {
		start := time.Now()
		rep := f.shard(ctx, b, fleet.OpPreview, 1, part, nil)
		if fails := failures(rep); len(fails) > 0 {
			b.Fatalf("preview: %v", fails)
		}
		return time.Since(start)
	}
	preview(f.stacks[fleetSize-1:]) // untimed: the first start of the plugins

	wall := map[int]float64{} // shard size -> seconds for the shard
	next := 0
	for _, size := range []int{5, 10, 20} {
		b.Run(fmt.Sprintf("shard=%d", size), func(b *testing.B) {
			for b.Loop() {
				if next+size > fleetSize-1 {
					next = 0
				}
				d := preview(f.stacks[next : next+size])
				next += size
				wall[size] = d.Seconds()
			}
			b.ReportMetric(wall[size]/float64(size), "s/stack")
		})
	}
	// the figures, from the three shards above (a sub-benchmark: a parent
	// benchmark's own log is not printed)
	b.Run("projection", func(b *testing.B) {
		for b.Loop() {
		}
		if len(wall) < 3 {
			b.Skip("needs the three shard sizes")
		}
		project(b, wall, jobStart(b))
	})
}

// project logs and reports the marginal cost of a stack in a shard and the
// wall time of a fleet preview on N runners: each runner takes a shard
// job at a time, each job pays the start cost, then its shard's time.
func project(b *testing.B, wall map[int]float64, start startCost) {
	marginal := (wall[20] - wall[5]) / 15
	b.Logf("this machine: %d CPUs; a shard runs 4 stacks at a time", runtime.NumCPU())
	b.Logf("shard wall: 5 stacks %.1f s, 10 stacks %.1f s, 20 stacks %.1f s; marginal %.2f s/stack (goal < 1.5)", wall[5], wall[10], wall[20], marginal)
	b.Logf("shard job start: %.1f s (%s)", start.total, start.how)
	b.ReportMetric(marginal, "marginal-s/stack")
	b.ReportMetric(start.total, "job-start-s")
	for _, stacks := range []int{200, 1000} {
		for _, runners := range []int{20, 50} {
			best, bestSize := math.Inf(1), 0
			for _, size := range []int{5, 10, 20} {
				jobs := (stacks + size - 1) / size
				rounds := (jobs + runners - 1) / runners
				if t := float64(rounds) * (start.total + wall[size]); t < best {
					best, bestSize = t, size
				}
			}
			b.Logf("projected: %d stacks on %d runners: %.1f min (shards of %d)", stacks, runners, best/60, bestSize)
			b.ReportMetric(best/60, fmt.Sprintf("min-%d-stacks-%d-runners", stacks, runners))
		}
	}
}

type startCost struct {
	total float64
	how   string
}

// jobStart is what a warm shard job spends before its first stack, on
// this machine: extracting the Pulumi toolchain cache as actions/cache
// does (tar and zstd), its download at an assumed 100 MB/s, and
// .ci/env.sh. The other cache (stackctl and the plugins) is not counted.
func jobStart(b *testing.B) startCost {
	root := pulumitest.PulumiRoot(b)
	dir := b.TempDir()
	archive := filepath.Join(dir, "toolchain.tzst")
	if out, err := exec.Command("tar", "--zstd", "-cf", archive, "-C", root, ".").CombinedOutput(); err != nil {
		b.Fatalf("tar: %v: %s", err, out)
	}
	fi, err := os.Stat(archive)
	if err != nil {
		b.Fatal(err)
	}
	into := filepath.Join(dir, "restored")
	if err := os.MkdirAll(into, 0o755); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if out, err := exec.Command("tar", "--zstd", "-xf", archive, "-C", into).CombinedOutput(); err != nil {
		b.Fatalf("untar: %v: %s", err, out)
	}
	extract := time.Since(t0).Seconds()
	t0 = time.Now()
	cmd := exec.Command("../.ci/env.sh")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf(".ci/env.sh: %v: %s", err, out)
	}
	env := time.Since(t0).Seconds()
	mb := float64(fi.Size()) / 1e6
	download := mb / 100
	return startCost{
		total: extract + download + env,
		how: fmt.Sprintf("toolchain cache %.0f MB compressed: extraction %.1f s measured, download %.1f s at an assumed 100 MB/s; .ci/env.sh %.1f s measured",
			mb, extract, download, env),
	}
}
