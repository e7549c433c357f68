#!/usr/bin/env bash
# summary_big.sh - the summary of a very large run: time, passes and peak
# memory of `headroomd summarize` over a synthetic stored run (issue: a
# 10,000,000-request run of 256 tokens each summarised exactly within a
# few hundred MiB).
#
# Run:   bench/summary_big.sh [N] [TOKENS] [MEMORY_KB...]
#        (default 10000000 256 and the daemon's default budget, 256 MiB)
#        Mind the store's size: records of 256 tokens take ~4.4 KiB each in
#        SQLite (their blob spills to overflow pages), so 10M of them are
#        44 GiB, and a pass that does not fit in the page cache is bound by
#        random reads (docs/performance.md §2b).
# Needs: a build with headroomd, headroom-mock and hr-bench-records
#        ($HEADROOM_BIN, default build-bench/bin: bench/build.sh), ~1 KiB of
#        disk per record in $BENCH_DIR (default /tmp), /usr/bin/time.
# Steps: a real 4-request run against headroom-mock makes the run row and
# spec; hr-bench-records (bench/gen_records.c) replaces its records with N
# synthetic ones; then `headroomd summarize --stats` recomputes the summary
# once per budget, and the script prints the wall time, passes, sorted runs
# on disk and peak RSS (getrusage's maxrss of the process) of each.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${HEADROOM_BIN:-$root/build-bench/bin}"
n="${1:-10000000}"
tokens="${2:-256}"
shift 2 2>/dev/null || shift $#
budgets=("$@")
[ ${#budgets[@]} -gt 0 ] || budgets=(default)
work="$(mktemp -d "${BENCH_DIR:-/tmp}/hr-summary-big.XXXXXX")"
trap 'kill $mock_pid $daemon_pid 2>/dev/null || true; rm -rf "$work"' EXIT
mock_pid= daemon_pid=

"$bin/headroom-mock" --listen 127.0.0.1:0 >"$work/mock.out" 2>/dev/null &
mock_pid=$!
for _ in $(seq 50); do grep -q "listening on" "$work/mock.out" && break; sleep 0.1; done
mock_addr="$(grep -o '127.0.0.1:[0-9]*' "$work/mock.out" | head -1)"
"$bin/headroomd" --listen 127.0.0.1:0 --data "$work/data" >"$work/daemon.out" 2>/dev/null &
daemon_pid=$!
for _ in $(seq 50); do grep -q "listening on" "$work/daemon.out" && break; sleep 0.1; done
api="http://$(grep -o '127.0.0.1:[0-9]*' "$work/daemon.out" | head -1)/api/v1"
spec='{"name":"summary-big","target":{"url":"http://'"$mock_addr"'","model":"m","endpoint":"chat","stream":true},"workload":{"isl":{"mean":256,"stddev":0},"osl":{"mean":'"$tokens"',"stddev":0}},"load":{"mode":"concurrency","concurrency":4,"requests":4},"workers":1}'
curl -sf -XPOST -H 'Content-Type: application/json' --data "$spec" "$api/runs" >/dev/null
for _ in $(seq 300); do
	curl -sf "$api/runs/1" | grep -q '"state": *"succeeded"' && break
	sleep 0.2
done
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

start=$(date +%s)
"$bin/hr-bench-records" "$work/data/headroom.db" 1 "$n" "$tokens"
echo "generated $n records of $tokens tokens in $(( $(date +%s) - start )) s;" \
     "store $(du -sh "$work/data" | cut -f1)"
echo "binaries: $bin ($("$bin/headroomd" --version))"
for b in "${budgets[@]}"; do
	args=(summarize --data "$work/data" --stats)
	[ "$b" = default ] || args+=(--memory-kb "$b")
	start=$(date +%s.%N)
	"$bin/headroomd" "${args[@]}" 1 >"$work/summary-$b.json" 2>"$work/stats-$b.txt"
	echo "budget $b: $(cat "$work/stats-$b.txt"), wall $(echo "$(date +%s.%N) - $start" | bc) s"
	python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['metrics']; \
print('  ttft p50/p99 %.3f/%.3f ms, inter_chunk count %d p99 %.3f ms' % \
(m['time_to_first_token']['p50'], m['time_to_first_token']['p99'], \
m['inter_chunk_latency']['count'], m['inter_chunk_latency']['p99']))" "$work/summary-$b.json"
done
if [ ${#budgets[@]} -gt 1 ]; then
	for b in "${budgets[@]:1}"; do
		cmp -s "$work/summary-${budgets[0]}.json" "$work/summary-$b.json" &&
			echo "summary with budget $b identical to budget ${budgets[0]}" ||
			echo "summary with budget $b DIFFERS from budget ${budgets[0]}"
	done
fi
