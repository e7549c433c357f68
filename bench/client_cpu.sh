#!/usr/bin/env bash
# client_cpu.sh - client CPU per streamed request / per streamed token:
# headroom-worker (via headroomd) vs wrk, against headroom-mock with zero delay.
#
# Run:   bench/client_cpu.sh [--reps 3] [--osl 16,64,256,1024] [--requests 20000] [--json out.json]
# Needs: Release build in build-bench/ (bench/build.sh; built here if missing), wrk, taskset, 2 CPUs.
# Pins daemon + worker (and wrk) to CPU 0, the mock to CPU 1; reports CPU time
# per completed request (medians over --reps runs), worker/wrk ratios, the
# mock's CPU per request, and the slope of CPU per request against output
# tokens. Details: the header of bench/client_cpu.py. Default run: ~1.5 min.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
if [ -z "${HEADROOM_BIN:-}" ] && [ ! -x "$root/build-bench/bin/headroomd" ]; then
	"$here/build.sh"
fi
command -v wrk >/dev/null || { echo "client_cpu.sh: wrk is missing (apt-get install -y wrk)" >&2; exit 1; }
exec /usr/bin/python3 "$here/client_cpu.py" "$@"
