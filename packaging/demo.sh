#!/bin/sh
# demo.sh - what `make demo` runs: start headroom-mock and headroomd (on its
# embedded SQLite store in ./headroom-data), submit examples/demo.json,
# print its summary, then keep both serving until Ctrl-C.
set -eu
cd "$(dirname "$0")/.."
BIN=build/bin
DATA=${HEADROOM_DEMO_DATA:-headroom-data}
MOCK_ADDR=${HEADROOM_DEMO_MOCK:-127.0.0.1:0}
API_ADDR=${HEADROOM_DEMO_LISTEN:-127.0.0.1:8080}
LOG=$(mktemp -d)

cleanup() {
	trap - INT TERM EXIT
	[ -n "${DPID:-}" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -n "${MPID:-}" ] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	rm -rf "$LOG"
	echo
	echo "demo stopped; the run history stays in $DATA/"
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

# Waits for a "listening on" line in $1 and prints the HOST:PORT in it.
addr_of() {
	i=0
	while [ $i -lt 100 ]; do
		a=$(sed -n 's|.*listening on \(http://\)\{0,1\}\([^ ]*\).*|\2|p' "$1" | head -n 1)
		[ -n "$a" ] && { echo "$a"; return 0; }
		i=$((i + 1))
		sleep 0.1
	done
	echo "demo: $2 did not start; its output:" >&2
	cat "$1" >&2
	exit 1
}

# A little simulated latency (20 ms to the first token, 4 ms per token after)
# makes the numbers look like a server's; drop the flags for raw speed.
"$BIN/headroom-mock" --listen "$MOCK_ADDR" --ttft-ms 20 --itl-ms 4 >"$LOG/mock.out" 2>&1 &
MPID=$!
MOCK=$(addr_of "$LOG/mock.out" headroom-mock)

"$BIN/headroomd" --listen "$API_ADDR" --data "$DATA" >"$LOG/d.out" 2>"$LOG/d.err" &
DPID=$!
sleep 0.3
if ! kill -0 "$DPID" 2>/dev/null; then
	# the default port is taken: let the kernel pick one
	"$BIN/headroomd" --listen 127.0.0.1:0 --data "$DATA" >"$LOG/d.out" 2>"$LOG/d.err" &
	DPID=$!
fi
API=$(addr_of "$LOG/d.out" headroomd)
export HEADROOM_URL="http://$API"

echo "headroom-mock  http://$MOCK   (OpenAI-compatible, TTFT 20 ms, ITL 4 ms)"
echo "headroomd      http://$API   (REST API under /api/v1, data in $DATA/)"
echo "dashboard      http://$API/   (open it in a browser)"
echo

# Point the sample spec at the mock's actual address and submit it.
SPEC="$LOG/demo.json"
sed "s|http://127.0.0.1:8000|http://$MOCK|" examples/demo.json >"$SPEC"
rc=0
"$BIN/headroom" submit "$SPEC" --wait || rc=$?
case $rc in
0) ;;
4) echo "demo: the run succeeded, but on this machine the load generator was the limit" \
	"(the client verdict above says why)" >&2 ;;
*) echo "demo: the sample run did not succeed (exit $rc)" >&2 ;;
esac

echo
echo "Still serving. Open the dashboard at http://$API/ or try:"
echo "  HEADROOM_URL=http://$API $BIN/headroom list"
echo "  curl -s http://$API/api/v1/runs | head -c 400"
echo "Ctrl-C stops the demo."
wait "$DPID"
