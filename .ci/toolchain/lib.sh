# Shared by the toolchain scripts (sourced): the per-user cache, Go settings
# for wrapper modules, a fresh work directory for one, and building a tool
# from one.
CACHE_ROOT="${GPU_NODE_POOLS_TOOLCHAIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-node-pools/toolchain}"
export GOFLAGS="-buildvcs=false -mod=mod" GOTOOLCHAIN=local

# fresh_dir NAME: an empty directory for the wrapper module NAME.
fresh_dir() {
	local dir="$CACHE_ROOT/work/$1"
	rm -rf "$dir" && mkdir -p "$dir"
	echo "$dir"
}

# build_tool DIR BIN NAME PKG [go build flags...]: make PKG the tool import
# of the wrapper module in DIR, resolve its dependencies and build it as
# BIN/NAME, through a temporary name so a failed build never looks cached.
build_tool() {
	local dir=$1 bin=$2 name=$3 pkg=$4
	shift 4
	printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$dir/tools.go"
	(cd "$dir" && go mod tidy >&2 && go build "$@" -o "$bin/$name.tmp" "$pkg")
	mv "$bin/$name.tmp" "$bin/$name"
}

# go_install BIN PKG@VERSION: go install a released command into BIN
# (nothing when it is there).
go_install() {
	local bin=$1 pkg=$2 name=${2%@*}
	name=${name##*/}
	[ -x "$bin/$name" ] && return
	echo "toolchain: building $pkg" >&2
	GOBIN="$bin" go install "$pkg"
}
