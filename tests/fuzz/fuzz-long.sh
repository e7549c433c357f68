#!/usr/bin/env bash
# fuzz-long.sh - `make fuzz-long`: runs every libFuzzer target built in a
# build directory for a long time, one after the other, each on a copy of
# its seed corpus, and prints a summary (executions, time, rate, coverage,
# features, findings). Inputs that add coverage are merged back into
# tests/fuzz/corpus/<target>/ only when they are few and small.
#
#   tests/fuzz/fuzz-long.sh BUILD_DIR
#
# Environment:
#   FUZZ_RUNS        executions per target (default 10000000)
#   FUZZ_TIME        seconds per target at most (default 0: no limit)
#   FUZZ_TARGETS     which targets, e.g. "spec record" (default: all built)
#   FUZZ_MERGE_MAX   merge back at most this many new inputs per target
#                    (default 8; 0: never merge)
#   FUZZ_MERGE_BYTES ... each at most this long (default 4096)
# A crash, leak, timeout or undefined behaviour stops that target; its
# input is kept in BUILD_DIR/fuzz-long/<target>/ and the script ends with
# status 1 after the others ran. Logs: BUILD_DIR/fuzz-long/<target>.log.
set -u

build=${1:?usage: fuzz-long.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
runs=${FUZZ_RUNS:-10000000}
max_time=${FUZZ_TIME:-0}
merge_max=${FUZZ_MERGE_MAX:-8}
merge_bytes=${FUZZ_MERGE_BYTES:-4096}
out=$build/fuzz-long
mkdir -p "$out"

targets=${FUZZ_TARGETS:-}
if [ -z "$targets" ]; then
	for bin in "$build"/tests/fuzz_*; do
		[ -x "$bin" ] && targets="$targets ${bin##*/fuzz_}"
	done
fi
if [ -z "$targets" ]; then
	echo "fuzz-long: no fuzz targets in $build/tests (make fuzz builds them)" >&2
	exit 2
fi

summary=$out/summary.txt
printf '%-10s %10s %7s %8s %6s %7s %7s %s\n' target execs time_s exec/s cov ft corpus result \
	>"$summary"
status=0
for t in $targets; do
	bin=$build/tests/fuzz_$t
	seeds=$src/tests/fuzz/corpus/$t
	work=$out/$t
	log=$out/$t.log
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/merged"
	cp "$seeds"/* "$work/corpus/" 2>/dev/null
	limit=""
	[ "$max_time" != 0 ] && limit=", at most $max_time s"
	echo "fuzz-long: $t ($runs runs$limit)"
	start=$(date +%s)
	"$bin" -runs="$runs" -max_total_time="$max_time" -timeout=25 -print_final_stats=1 \
		-artifact_prefix="$work/" "$work/corpus" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	ncorp=$(find "$work/corpus" -type f | wc -l)
	if [ "$rc" -eq 0 ]; then
		result=ok
		# the inputs that add coverage to the seeds, merged back if few and small
		cp "$seeds"/* "$work/merged/" 2>/dev/null
		"$bin" -merge=1 "$work/merged" "$work/corpus" >>"$log" 2>&1
		new=()
		for f in "$work/merged"/*; do
			[ -e "$seeds/${f##*/}" ] || new+=("$f")
		done
		big=0
		for f in "${new[@]}"; do
			[ "$(stat -c %s "$f")" -le "$merge_bytes" ] || big=1
		done
		if [ "${#new[@]}" -eq 0 ]; then
			result="ok, nothing new"
		elif [ "${#new[@]}" -le "$merge_max" ] && [ "$big" -eq 0 ]; then
			cp "${new[@]}" "$seeds/"
			result="ok, merged ${#new[@]} new inputs into tests/fuzz/corpus/$t"
		else
			result="ok, ${#new[@]} new inputs not merged (kept in $work/merged)"
		fi
	else
		status=1
		result="FAILED (exit $rc): $(ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' \
			| head -3 | tr '\n' ' ')see $log"
	fi
	printf '%-10s %10s %7s %8s %6s %7s %7s %s\n' "$t" "${execs:-?}" "$secs" "${rate:-?}" \
		"${cov:-?}" "${ft:-?}" "$ncorp" "$result" >>"$summary"
	tail -1 "$summary"
done
echo
cat "$summary"
exit $status
