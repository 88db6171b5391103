#!/usr/bin/env bash
# Builds rclone, the weight download Job's copier (serving.RcloneImage), from
# its Go module into the per-user toolchain cache, with the commands the Job
# runs (copy, lsf) and the local backend the tests stand a weights store up
# with: the Job's script then runs against the real rclone's filters and
# copy. About 2 minutes cold, seconds when cached. Prints the bin directory.
set -euo pipefail
# Keep in step with serving.RcloneImage.
VERSION=v1.75.1
. "$(dirname "$0")/lib.sh"
BIN="$CACHE_ROOT/rclone-$VERSION/bin"
if [ ! -x "$BIN/rclone" ]; then
	echo "toolchain: building rclone $VERSION (about 2 minutes cold)" >&2
	dir=$(fresh_dir rclone)
	mkdir -p "$BIN"
	printf 'module gpu-node-pools-toolchain/rclone\n\ngo 1.26\n\nrequire github.com/rclone/rclone %s\n' "$VERSION" >"$dir/go.mod"
	cat >"$dir/main.go" <<'GO'
// rclone with the commands and backend the weight download's tests use.
package main

import (
	_ "github.com/rclone/rclone/backend/local"
	"github.com/rclone/rclone/cmd"
	_ "github.com/rclone/rclone/cmd/copy"
	_ "github.com/rclone/rclone/cmd/lsf"
)

func main() { cmd.Main() }
GO
	(cd "$dir" && go mod tidy >&2 && go build -ldflags "-X github.com/rclone/rclone/fs.Version=$VERSION" -o "$BIN/rclone.tmp" .)
	mv "$BIN/rclone.tmp" "$BIN/rclone"
fi
echo "$BIN"
