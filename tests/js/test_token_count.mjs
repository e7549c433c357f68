// test_token_count.mjs - where a record's ISL and OSL come from
// (workload.token_count, docs/metrics.md "Token counts"), end to end
// through headroomd, its workers and headroom-mock. The mock counts prompts
// with the same tokenizer file but reports one token per word it writes,
// so its usage differs from a tokenizer's count of its output: the
// discrepancy the summary reports is checked against tiktoken's own
// WebAssembly encoder over the mock's answer, fetched directly. Also:
// outputs cut short by the mock's --early-stop counted as missing their
// requested length (and none with ignore_eos), the chunk count as OSL,
// the defaults, and the spec's errors.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_token_count.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Tiktoken } from 'tiktoken/lite';
import { TOKENIZERS, daemonApi, start, stop } from './harness.mjs';

const FILE = TOKENIZERS.cl100k_base;
const PROMPT = 'The quick brown fox jumps over the lazy dog near the quiet riverbank.';
const OSL = 12;
const REASONING = 3;

let daemon, api, mock, dataDir, dataset, tk;

before(async () => {
	const enc = JSON.parse(fs.readFileSync(FILE, 'utf8'));
	tk = new Tiktoken(enc.bpe_ranks, enc.special_tokens, enc.pat_str);
	dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-test-'));
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dataDir]);
	api = daemonApi(daemon);
	mock = await start('headroom-mock', [
		'--listen', '127.0.0.1:0', '--quiet', '--tokenizer', FILE,
		'--reasoning-tokens', String(REASONING),
	]);
	const line = JSON.stringify({ text: PROMPT, output_length: OSL }) + '\n';
	const up = await api.call('POST', '/datasets?format=single_turn&name=one', null, line);
	assert.equal(up.status, 201, up.text);
	dataset = up.json();
});

after(async () => {
	tk.free();
	const codes = [await stop(mock), await stop(daemon)];
	fs.rmSync(dataDir, { recursive: true, force: true });
	assert.deepEqual(codes, [0, 0], 'exit statuses');
});

function datasetSpec(stream, tokenCount) {
	return {
		name: 'token count',
		target: { url: `http://${mock.addr}`, model: 'mock-model', stream },
		workload: {
			kind: 'dataset', dataset: { id: dataset.id }, tokenizer: FILE,
			token_count: tokenCount,
		},
		load: { mode: 'concurrency', concurrency: 2, requests: 10 },
		workers: 1,
	};
}

// The mock's answer to the dataset's prompt (the same text every time),
// reasoning first, as a stream delivers it.
async function directAnswer() {
	const r = await fetch(`http://${mock.addr}/v1/chat/completions`, {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({
			model: 'mock-model', max_tokens: OSL,
			messages: [{ role: 'user', content: PROMPT }],
		}),
	});
	const m = (await r.json()).choices[0].message;
	return m.reasoning_content + m.content;
}

for (const stream of [true, false]) {
	test(`tokenizer counts (${stream ? 'streamed' : 'whole answers'}) against tiktoken`, async () => {
		const isl = tk.encode(PROMPT).length;
		const osl = tk.encode(await directAnswer()).length;
		assert.notEqual(osl, OSL, 'the mock\'s word count differs from the tokenizer\'s');
		const diff = (Math.abs(OSL - osl) * 100) / osl;
		const { run, recs } = await api.runToEnd(
			datasetSpec(stream, { isl: 'tokenizer', osl: 'tokenizer', discrepancy_pct: diff - 1 }),
		);
		assert.equal(recs.length, 10);
		for (const r of recs) {
			assert.equal(r.error, '', r.error_message);
			assert.equal(r.isl_source, 'tokenizer');
			assert.equal(r.isl, isl);
			assert.equal(r.tokenizer_isl, isl);
			assert.equal(r.usage_isl, isl, 'the mock counts with the same tokenizer');
			assert.equal(r.osl_source, 'tokenizer');
			assert.equal(r.osl, osl, 'content and reasoning, counted by the tokenizer');
			assert.equal(r.tokenizer_osl, osl);
			assert.equal(r.usage_osl, OSL);
			assert.equal(r.requested_osl, OSL);
			assert.equal(r.reasoning_tokens, REASONING);
		}
		const t = run.summary.tokens;
		assert.deepEqual(t.isl_sources, { tokenizer: 10 });
		assert.deepEqual(t.osl_sources, { tokenizer: 10 });
		const d = t.usage_discrepancy;
		assert.equal(d.threshold_pct, diff - 1);
		assert.equal(d.isl_diff_pct.count, 10);
		assert.equal(d.isl_diff_pct.max, 0);
		assert.equal(d.osl_diff_pct.count, 10);
		assert.ok(Math.abs(d.osl_diff_pct.avg - diff) < 1e-9, `${d.osl_diff_pct.avg} vs ${diff}`);
		assert.equal(d.over_threshold, 10);
		// the mock answers osl tokens by its own count: by the tokenizer's,
		// every output is longer or shorter than asked
		assert.deepEqual(t.osl_mismatch, {
			requested: 10, missed: 10, shorter: osl < OSL ? 10 : 0, longer: osl > OSL ? 10 : 0,
		});
	});
}

test('conversations: inputs compared on first turns only', async () => {
	const conv = JSON.stringify({ session_id: 'c', turns: [
		{ text: PROMPT, output_length: 4 }, { text: 'And then?', output_length: 4 }] }) + '\n';
	const up = await api.call('POST', '/datasets?format=multi_turn&name=conv', null, conv);
	assert.equal(up.status, 201, up.text);
	const spec = datasetSpec(true, { isl: 'tokenizer' });
	spec.workload.dataset.id = up.json().id;
	spec.load.requests = 6;
	const { run, recs } = await api.runToEnd(spec);
	const first = recs.filter((r) => r.turn === 0);
	assert.ok(first.length > 0 && first.length < recs.length, 'both kinds of turn');
	for (const r of recs) {
		// a later turn's server count covers the history it resends
		assert.equal(r.tokenizer_isl, tk.encode(r.turn === 0 ? PROMPT : 'And then?').length);
		assert.ok(r.turn === 0 ? r.usage_isl === r.tokenizer_isl : r.usage_isl > r.tokenizer_isl);
	}
	const d = run.summary.tokens.usage_discrepancy;
	assert.equal(d.isl_diff_pct.count, first.length);
	assert.equal(d.isl_diff_pct.max, 0);
});

test('defaults: usage first, the tokenizer\'s ISL kept beside it', async () => {
	const { run, recs } = await api.runToEnd(datasetSpec(true, undefined));
	const isl = tk.encode(PROMPT).length;
	for (const r of recs) {
		assert.equal(r.isl_source, 'server_usage');
		assert.equal(r.tokenizer_isl, isl);
		assert.equal(r.osl_source, 'server_usage');
		assert.equal(r.osl, OSL);
		assert.equal(r.tokenizer_osl, null, 'the output is not counted unless asked');
	}
	assert.deepEqual(run.spec.workload.token_count,
		{ isl: 'usage', osl: 'usage', discrepancy_pct: 10 });
	const t = run.summary.tokens;
	assert.equal(t.usage_discrepancy.over_threshold, 0);
	assert.equal(t.usage_discrepancy.osl_diff_pct.count, 0);
	assert.deepEqual(t.osl_mismatch, { requested: 10, missed: 0, shorter: 0, longer: 0 });
});

test('chunks: one per content-bearing event', async () => {
	const m4 = await start('headroom-mock', [
		'--listen', '127.0.0.1:0', '--quiet', '--tokens-per-chunk', '4',
	]);
	try {
		const { run, recs } = await api.runToEnd({
			name: 'chunks',
			target: { url: `http://${m4.addr}`, model: 'mock-model', stream: true },
			workload: { isl: { mean: 8, stddev: 0 }, osl: { mean: 10, stddev: 0 },
				token_count: { osl: 'chunks' } },
			load: { mode: 'concurrency', concurrency: 2, requests: 6 },
		});
		for (const r of recs) {
			assert.equal(r.osl_source, 'chunks');
			assert.equal(r.osl, 3, '10 tokens in chunks of 4');
			assert.equal(r.n_chunks, 3);
			assert.equal(r.usage_osl, 10);
			assert.equal(r.tokenizer_isl, null, 'no tokenizer');
		}
		assert.deepEqual(run.summary.tokens.osl_mismatch,
			{ requested: 6, missed: 6, shorter: 6, longer: 0 });
	} finally {
		assert.equal(await stop(m4), 0, 'headroom-mock exit status');
	}
});

test('outputs stopped early miss their requested length; ignore_eos keeps it', async () => {
	const me = await start('headroom-mock', [
		'--listen', '127.0.0.1:0', '--quiet', '--early-stop', '0.5',
	]);
	try {
		const spec = (ignoreEos) => ({
			name: 'early stop',
			target: { url: `http://${me.addr}`, model: 'mock-model', stream: true },
			workload: { isl: { mean: 8, stddev: 0 }, osl: { mean: 10, stddev: 0 },
				ignore_eos: ignoreEos },
			load: { mode: 'concurrency', concurrency: 4, requests: 60 },
		});
		const { run, recs } = await api.runToEnd(spec(false));
		const short = recs.filter((r) => r.osl < r.requested_osl).length;
		assert.ok(short > 10 && short < 50, `${short} of 60 stopped early`);
		for (const r of recs)
			assert.ok(r.osl === 10 || r.osl === 5, `osl ${r.osl}`);
		assert.deepEqual(run.summary.tokens.osl_mismatch,
			{ requested: 60, missed: short, shorter: short, longer: 0 });
		const full = await api.runToEnd(spec(true));
		assert.deepEqual(full.run.summary.tokens.osl_mismatch,
			{ requested: 60, missed: 0, shorter: 0, longer: 0 });
	} finally {
		assert.equal(await stop(me), 0, 'headroom-mock exit status');
	}
});

test('the spec\'s errors name the field', async () => {
	const base = () => ({
		target: { url: `http://${mock.addr}`, model: 'mock-model' },
		workload: { token_count: {} },
		load: { mode: 'concurrency', concurrency: 1, requests: 1 },
	});
	const cases = [
		[{ osl: 'tokenizer' }, 'workload.token_count.osl'],
		[{ isl: 'tokenizer' }, 'workload.token_count.isl'],
		[{ isl: 'chunks' }, 'workload.token_count.isl'],
		[{ osl: 'words' }, 'workload.token_count.osl'],
		[{ discrepancy_pct: -1 }, 'workload.token_count.discrepancy_pct'],
		[{ extra: 1 }, 'workload.token_count.extra'],
	];
	for (const [tc, field] of cases) {
		const s = base();
		s.workload.token_count = tc;
		const r = await api.call('POST', '/runs', s);
		assert.equal(r.status, 400, r.text);
		assert.equal(r.json().error.field, field, r.text);
	}
});
