#!/bin/sh
# install-deps.sh - install the Debian packages headroom needs to build and test.
#
# Idempotent: packages already present are left alone, and apt is only
# consulted when something is missing. Run as root on Debian 12 (or with
# sudo available). Used by `make demo` and `make check`.
set -eu

BUILD_PKGS="build-essential cmake pkg-config libmicrohttpd-dev libcurl4-openssl-dev
libsqlite3-dev libjansson-dev libzmq3-dev libpcre2-dev libssl-dev libyaml-dev libpng-dev libjpeg-dev"
TEST_PKGS="python3 python3-numpy python3-scipy python3-xmlschema python3-yaml python3-jsonschema python3-zmq curl
chromium prometheus"

# prometheus brings promtool, which checks headroomd's own GET /metrics
# (tests/integration/test_selfmetrics.py).
# The Debian package (make deb, make check-packaging): manual pages from
# --help, lintian, and systemd-analyze for the unit (package systemd).
PACKAGING_PKGS="help2man lintian systemd"

want="$BUILD_PKGS $TEST_PKGS $PACKAGING_PKGS"
# Chromium runs the dashboard's browser tests (tests/browser/, driven by
# playwright-core from npm). Node.js and npm drive them, the
# client-compatibility tests (the official openai npm client) and the
# dashboard's install of uPlot. A Node.js that already ships npm (for example from
# NodeSource) conflicts with Debian's npm package, so only ask for what is
# missing.
command -v node >/dev/null 2>&1 || want="$want nodejs"
command -v npm >/dev/null 2>&1 || want="$want npm"
# kubectl renders packaging/kubernetes/kustomization.yaml offline
# (tests/kubernetes/); any kubectl will do, Debian's is kubernetes-client.
command -v kubectl >/dev/null 2>&1 || want="$want kubernetes-client"
# ... and openssl makes the certificate its secrets.sh stores
want="$want openssl"

# shellcheck source-path=SCRIPTDIR source=lib-apt.sh
. "$(dirname "$0")/lib-apt.sh"
# shellcheck disable=SC2086
apt_install_missing install-deps $want

# The dashboard's uPlot, pinned by web/package-lock.json, is embedded into
# headroomd by the build: install it when missing or older than the lock.
web="$(cd "$(dirname "$0")/.." && pwd)/web"
if [ ! -f "$web/node_modules/.headroom-installed" ] ||
	[ "$web/package-lock.json" -nt "$web/node_modules/.headroom-installed" ]; then
	(cd "$web" && npm_config_cache="${npm_config_cache:-$web/../.cache/npm}" \
		npm ci --no-audit --no-fund --loglevel=error)
	touch "$web/node_modules/.headroom-installed"
fi
