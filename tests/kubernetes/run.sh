#!/usr/bin/env bash
# run.sh - run the offline checks of packaging/kubernetes/: tests/kubernetes/run.sh
#
# Installs the npm packages pinned by package-lock.json (the TypeScript
# compiler, the Kubernetes API types, a YAML parser) into
# tests/kubernetes/node_modules when they are missing or older than
# package.json or the lock file (npm's cache in the repository's ignored
# .cache/npm unless npm_config_cache says otherwise), then runs
# `node --test test_manifests.mjs`. ctest sets HEADROOM_BIN and HEADROOM_SRC.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stamp="$here/node_modules/.headroom-installed"

stale() {
	[ ! -f "$stamp" ] || [ "$here/package.json" -nt "$stamp" ] ||
		[ "$here/package-lock.json" -nt "$stamp" ]
}

if stale; then
	# one install at a time, should two checks start together
	exec 9>"${TMPDIR:-/tmp}/headroom-kubernetes-npm-install.lock"
	flock 9
	if stale; then
		export npm_config_cache="${npm_config_cache:-$here/../../.cache/npm}"
		(cd "$here" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
		touch "$stamp"
	fi
	flock -u 9
	exec 9>&-
fi

exec node --test "$here/test_manifests.mjs"
