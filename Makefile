# The main jobs. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
FUZZTIME ?= 20s
# Shared test assets (upstream charts, CRDs, reference data); see README.
export GPU_NODE_POOLS_SHARED ?= $(abspath $(CURDIR)/../shared)

.PHONY: test vet unit fuzz bench toolchain

## test: vet, every test, and a bounded fuzz run of config decoding.
test: vet unit fuzz

vet:
	go vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

unit:
	go test -count=1 ./...

fuzz:
	go test -run '^$$' -fuzz FuzzLoad -fuzztime $(FUZZTIME) ./stacks

## bench: speed and memory of config loading and of one program evaluation.
bench:
	go test -run '^$$' -bench . -benchmem ./...

## toolchain: build the pinned Pulumi CLI, Go language host and Kubernetes
## provider from Go modules into the per-user cache (seconds when cached).
toolchain:
	.ci/toolchain/install.sh
