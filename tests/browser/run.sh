#!/usr/bin/env bash
# run.sh - run one browser test of the dashboard: tests/browser/run.sh FILE.mjs
#
# Installs the npm dependencies pinned by package-lock.json into
# tests/browser/node_modules when they are missing or older than package.json or
# the lock file (npm's cache lives in the repository's ignored .cache/npm
# unless npm_config_cache says otherwise), then runs `node --test FILE`.
# Works from any directory; ctest sets HEADROOM_BIN for the test.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 TEST.mjs" >&2
	exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
test_file="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
stamp="$here/node_modules/.headroom-installed"

stale() {
	[ ! -f "$stamp" ] || [ "$here/package.json" -nt "$stamp" ] ||
		[ "$here/package-lock.json" -nt "$stamp" ]
}

if stale; then
	# ctest -j may start several of these at once: one installs, the
	# others wait for it.
	exec 9>"${TMPDIR:-/tmp}/headroom-browser-npm-install.lock"
	flock 9
	if stale; then
		export npm_config_cache="${npm_config_cache:-$here/../../.cache/npm}"
		(cd "$here" && npm install --no-audit --no-fund --no-save --prefer-offline \
			--loglevel=error)
		touch "$stamp"
	fi
	flock -u 9
	exec 9>&-
fi

exec node --test "$test_file"
