# The main jobs. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
FUZZTIME ?= 3000x
# every test's time, from the last make test (go test -json, through gotestsum)
TIMINGS ?= test-timings.json
# Shared test assets (upstream charts, CRDs, reference data); see README.
export GPU_NODE_POOLS_SHARED ?= $(abspath $(CURDIR)/../shared)

STACK ?= dev
export STACK
# Every Go build with -trimpath: the build cache then keys our packages by
# content, not directory, so the tests' copies of the project (make preview
# in a fresh directory, go run of the README's commands) reuse what the
# first build compiled instead of compiling the program again each (over
# 100 s of CPU per copy), and the tests, the previews and the copies share
# one cache.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

.PHONY: preview destroy stack env docs check test vet lint unit fuzz bench toolchain shared-bundle

## preview: pulumi preview of $(STACK) through the real engine (local file
## backend in .pulumi-state/); stacks with renderDir are also rendered. The
## stack is checked first (config, secrets, plugins) and created only when
## valid. DIFF=1 shows the property diff.
preview:
	.ci/preview.sh

## destroy: offboard the customer $(STACK): preview what goes, confirm by
## typing the stack's name (YES=1 skips it), delete protected pools only
## with UNPROTECT=1, then remove the stack, its state and its stack file;
## a rendering stack is told what to delete from its GitOps repository.
destroy:
	.ci/destroy.sh

## stack: a new customer's stack file, Pulumi.$(NAME).yaml, for TARGET=aks
## (CLUSTER, RESOURCE_GROUP) or TARGET=natron (CLUSTER, K8S_VERSION,
## IMAGE_URL, IMAGE_CHECKSUM; SITE, NAMESPACE optional); RENDER_DIR renders
## for GitOps. Each target's questions are its own (go run ./cmd/stackctl
## new -h lists them): their make variables reach stackctl through the
## environment. Prints the commands still to run (secrets, preview).
stack:
	go run ./cmd/stackctl new -answers-from-env -name "$(NAME)" -target "$(TARGET)" -cluster "$(CLUSTER)" \
		-render-dir "$(RENDER_DIR)"

## env: the environment make preview gives pulumi, as export lines:
## eval "$$(make -s env)"
env:
	@.ci/env.sh


## docs: regenerate docs/config.md and Pulumi.yaml's config declarations
## from the block table and the config types' doc comments (a test fails
## when they are stale).
docs:
	go test ./stacks/config -run TestConfigReferenceIsGenerated -count=1 -update-docs

## check: the inner loop (under 3 minutes warm): vet, gofmt, workflow lint
## and every test that needs none of the toolchain's servers or engines
## (those skip, saying so), the goldens among them; go test's cache reruns
## only what a change touches. make test before you push.
# Every tool variable the shell has is unset (eval "$(.ci/toolchain/all.sh)"
# sets them), not a list kept beside all.sh's.
check: vet lint
	env -u GPU_NODE_POOLS_STRICT $(foreach v,$(filter GPU_NODE_POOLS_%_BIN,$(.VARIABLES)),-u $(v)) go test ./...

## test: vet, workflow lint, every test (the real-engine ones too), and
## bounded fuzz runs of config decoding and validation.
test: vet lint unit fuzz

vet:
	go vet ./...
	@# a tidy go.mod, so that no build (the engine's included) ever rewrites it
	go mod tidy -diff
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint:
	.ci/toolchain/actionlint.sh

# The engine, API-server, scheduling and policy tests need the pinned
# toolchain, kube-apiserver, kube-scheduler, etcd, KWOK, the Kyverno CLI and
# the External Secrets Operator, Azurite (the fleet's azblob:// state) and
# rclone (the weight download's copier): each builds once per version into
# the per-user cache (.ci/toolchain/all.sh, two at a time, its exports
# evaluated here). The download's script runs in BusyBox (.ci/run installs
# it). gotestsum runs go test and keeps every test's time in $(TIMINGS);
# the end of the run prints each package's time and the 20 slowest tests
# (go run ./cmd/testtimes $(TIMINGS) prints them again). Three parallel
# tests on two cores: the cluster and engine tests spend part of their
# time waiting on their servers.
unit:
	@eval "$$(.ci/toolchain/all.sh)" && \
	"$$GPU_NODE_POOLS_GOTESTSUM_BIN/gotestsum" --format pkgname --jsonfile $(TIMINGS) -- \
		-count=1 -timeout 70m -parallel 3 ./...; \
	status=$$?; [ ! -s $(TIMINGS) ] || go run ./cmd/testtimes $(TIMINGS); exit $$status

# Each fuzz target for FUZZTIME executions; a crasher lands in
# stacks/program/testdata/fuzz/ and, committed, stays a regression case that every
# `go test` runs. A count, not a duration: replaying the cached corpus
# (which grows every run) took 18 of 20 seconds, and a clock that ran out
# while a new input was being minimized failed the run with "context
# deadline exceeded".
# Minimizing is capped: minimizing twelve long strings (the default allows a
# minute per input) would take the whole budget.
fuzz:
	go test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./stacks/program
	go test -run '^$$' -fuzz '^FuzzBreak$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x ./stacks/program

## bench: speed and memory of config loading, program evaluation (mocks) and
## fleet previews (real engine).
bench:
	GPU_NODE_POOLS_PULUMI_BIN="$$(.ci/toolchain/install.sh | tail -n 1)" \
	go test -run '^$$' -bench . -benchmem -timeout 60m ./...

## toolchain: build every tool the tests need (the pinned Pulumi CLI,
## language host and Kubernetes provider, kube-apiserver and its kin, etcd,
## KWOK, Kyverno, the External Secrets Operator, Azurite, rclone, gotestsum)
## into the per-user cache, two at a time, saying every minute what is
## still building (seconds when cached). To run one test with them:
## eval "$$(.ci/toolchain/all.sh)"; go test ./tests -run TestX
toolchain:
	.ci/toolchain/all.sh >/dev/null

## shared-bundle: the shared test assets, pinned by .ci/shared-assets.sha256,
## as the tar.gz the PR workflow downloads (publish it as the asset of the
## release "shared-assets": gh release upload shared-assets shared-assets.tar.gz --clobber).
shared-bundle:
	.ci/shared-assets.sh bundle "$(GPU_NODE_POOLS_SHARED)" shared-assets.tar.gz
