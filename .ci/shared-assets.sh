#!/usr/bin/env bash
# The shared test assets (upstream chart archives, CRDs, reference data and
# policy sets: ../shared, or $GPU_NODE_POOLS_SHARED) are pinned by the
# checksums in .ci/shared-assets.sha256, so that every CI, ours and
# GitHub's, tests against exactly the same upstream files.
#
#   shared-assets.sh manifest DIR      print the checksums of DIR's assets
#   shared-assets.sh verify DIR        check DIR against the pinned checksums
#   shared-assets.sh bundle DIR OUT    write the pinned files as a tar.gz,
#                                      the bundle the PR workflow downloads
set -euo pipefail
cd "$(dirname "$0")/.."
MANIFEST=.ci/shared-assets.sha256
DIRS="charts crds reference policies"

usage() { sed -n '2,10p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2

case "$cmd" in
manifest)
	(cd "$dir" && find $DIRS -type f ! -name 'README*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
	;;
verify)
	[ -d "$dir" ] || { echo "shared assets: no directory $dir" >&2; exit 1; }
	if ! (cd "$dir" && sha256sum --quiet -c -) <"$MANIFEST"; then
		echo "shared assets in $dir differ from $MANIFEST: a test would judge against other upstream files." >&2
		echo "If the assets were updated on purpose, run: .ci/shared-assets.sh manifest $dir > $MANIFEST" >&2
		exit 1
	fi
	echo "shared assets: $(wc -l <"$MANIFEST") files match $MANIFEST"
	;;
bundle)
	[ $# -eq 3 ] || usage
	out=$(realpath -m "$3")
	"$0" verify "$dir" >/dev/null
	(cd "$dir" && cut -c67- "$OLDPWD/$MANIFEST" | tar -czf "$out" -T -)
	echo "$out"
	;;
*) usage ;;
esac
