#!/bin/sh
# install-bench-deps.sh - install the Debian packages the benchmarks in bench/
# compare headroom with, and the tools they measure with.
#
# Idempotent: packages already present are left alone, and apt is only
# consulted when something is missing. Run as root on Debian 12 (or with
# sudo available). Not needed to build or test headroom (see
# install-deps.sh for that).
#   wrk               raw HTTP/1.1 load generator (bench/client_cpu.sh)
#   nghttp2-client    h2load, run in HTTP/1.1 mode (bench/client_cpu.sh)
#   python3-aiohttp   the asyncio client of bench/aiohttp_client.py
#   valgrind          instruction counts (bench/client_instr.py)
#   linux-perf        profiles of the hot paths (docs/performance.md)
#   strace            system call counts (docs/performance.md)
set -eu

want="wrk nghttp2-client python3-aiohttp valgrind linux-perf strace"

# shellcheck source-path=SCRIPTDIR source=lib-apt.sh
. "$(dirname "$0")/lib-apt.sh"
# shellcheck disable=SC2086
apt_install_missing install-bench-deps $want
