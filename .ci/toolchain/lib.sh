# Shared by the toolchain scripts (sourced): the per-user cache, Go settings
# for wrapper modules, and a fresh work directory for one.
CACHE_ROOT="${GPU_NODE_POOLS_TOOLCHAIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-node-pools/toolchain}"
export GOFLAGS="-buildvcs=false -mod=mod" GOTOOLCHAIN=local

# fresh_dir NAME: an empty directory for the wrapper module NAME.
fresh_dir() {
	local dir="$CACHE_ROOT/work/$1"
	rm -rf "$dir" && mkdir -p "$dir"
	echo "$dir"
}
