#!/usr/bin/env bash
# build.sh - builds the Release tree the benchmarks use (build-bench/) and
# records what it was built from in build-bench/BUILD_INFO.
#
# Run:   bench/build.sh            # a clean export of HEAD (git archive): the
#                                  # committed revision, whatever is being edited
#        bench/build.sh --worktree # the working tree as it is, edits included
# The scripts print BUILD_INFO's line with their results, so a figure always
# names the code it measured.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/build-bench"
if [ "${1:-}" = "--worktree" ]; then
	src="$root"
	info="worktree at $(git -C "$root" rev-parse --short HEAD)"
	if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
		info="$info + uncommitted changes"
	fi
else
	src="$(mktemp -d /tmp/hr-bench-src.XXXXXX)"
	trap 'rm -rf "$src"' EXIT
	git -C "$root" archive HEAD | tar -x -C "$src"
	# the dashboard embeds uPlot from web/node_modules (npm, not in git)
	if [ -d "$root/web/node_modules" ]; then
		ln -s "$root/web/node_modules" "$src/web/node_modules"
	fi
	info="commit $(git -C "$root" rev-parse --short HEAD) (clean export)"
fi
rm -rf "$out"
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out" -j2 >/dev/null
echo "$info, Release, built $(date -u '+%Y-%m-%d %H:%M UTC')" >"$out/BUILD_INFO"
cat "$out/BUILD_INFO"
