#!/usr/bin/env bash
# Installs Azurite, Microsoft's Azure Storage emulator (the npm package),
# into the per-user toolchain cache: the fleet's azblob:// state backend is
# tested against it through the real Pulumi engine. 3.35.0 is the newest
# release that runs on Node.js 20 (3.36 and later need Node.js 22). Seconds
# when cached. Prints the bin directory.
set -euo pipefail
VERSION=3.35.0
. "$(dirname "$0")/lib.sh"
DIR="$CACHE_ROOT/azurite-$VERSION"
BIN="$DIR/node_modules/.bin"
if [ ! -x "$BIN/azurite-blob" ]; then
	command -v npm >/dev/null || { echo "toolchain: azurite needs Node.js and npm (https://nodejs.org)" >&2; exit 1; }
	echo "toolchain: installing azurite $VERSION from the npm registry" >&2
	rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp"
	npm install --prefix "$DIR.tmp" --no-audit --no-fund --loglevel=error "azurite@$VERSION" >&2
	rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
fi
echo "$BIN"
