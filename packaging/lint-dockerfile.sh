#!/bin/sh
# lint-dockerfile.sh - checks the Dockerfile with two linters from npm (no
# image registry is needed): dockerfilelint (instruction arguments, ports,
# practices) and dockerfile-utils (the Dockerfile language service's
# validator: syntax, flags, durations). Pinned versions are installed into
# .cache/dockerfile-lint on first use (npm cache in .cache/npm). Run by
# `make check-packaging`; exits non-zero on any finding.
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
dir="$src/.cache/dockerfile-lint"
stamp="$dir/.installed-dockerfilelint-1.8.0-dockerfile-utils-0.16.3"
if [ ! -f "$stamp" ]; then
	mkdir -p "$dir"
	npm_config_cache="${npm_config_cache:-$src/.cache/npm}" npm install --prefix "$dir" \
		--no-audit --no-fund --loglevel=error --no-save \
		dockerfilelint@1.8.0 dockerfile-utils@0.16.3 >/dev/null
	touch "$stamp"
fi
"$dir/node_modules/.bin/dockerfilelint" "$src/Dockerfile"
"$dir/node_modules/.bin/dockerfile-utils" lint "$src/Dockerfile"
echo "lint-dockerfile: Dockerfile passes dockerfilelint 1.8.0 and dockerfile-utils 0.16.3"
