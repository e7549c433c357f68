#!/usr/bin/env bash
# client_cpu.sh - client CPU per streamed request / per streamed token, side by
# side: headroom (worker; worker + daemon), wrk, h2load and a Python aiohttp
# client written like vLLM's benchmark, against headroom-mock with zero delay.
#
# Run:   bench/client_cpu.sh [--reps 3] [--osl 16,64,256,1024] [--tools headroom,wrk,h2load,aiohttp]
#                            [--requests 20000] [--json out.json]
# Needs: Release build in build-bench/ (bench/build.sh; built here if missing), taskset,
#        2 CPUs; wrk, h2load (nghttp2-client) and python3-aiohttp for their columns:
#        packaging/install-bench-deps.sh installs them.
# Pins the client side to CPU 0, the mock to CPU 1; reports CPU time per
# completed request (medians over --reps runs), the ratios to wrk, the mock's
# CPU per request, which side was busy, and the slope of CPU per request
# against output tokens. Details: the header of bench/client_cpu.py.
# Default run: ~4 min.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
if [ -z "${HEADROOM_BIN:-}" ] && [ ! -x "$root/build-bench/bin/headroomd" ]; then
	"$here/build.sh"
fi
for t in wrk h2load; do
	command -v "$t" >/dev/null ||
		echo "client_cpu.sh: $t is missing: packaging/install-bench-deps.sh (its column is left out)" >&2
done
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null ||
	echo "client_cpu.sh: python3-aiohttp is missing: packaging/install-bench-deps.sh (its column is left out)" >&2
exec /usr/bin/python3 "$here/client_cpu.py" "$@"
