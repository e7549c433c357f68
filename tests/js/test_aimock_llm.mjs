// test_aimock_llm.mjs - headroom's Responses and Messages endpoint types
// against a third-party server: aimock (@copilotkit/aimock, MIT), an
// independent mock of the OpenAI and Anthropic APIs, serves every request
// from one fixture, split into chunks of 20 characters with a fixed pause
// between them, as typed events (response.output_text.delta;
// content_block_delta). Each run must count every request valid, see
// exactly the chunks aimock sends, the last one no sooner than its pauses
// allow, on both transports; aimock's usage says 0 tokens, so the output length is
// counted from the chunks (workload.token_count.osl "chunks").
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_aimock_llm.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { daemonApi, start, startAimock, stop } from './harness.mjs';

const TEXT = 'The quick brown fox jumps over the lazy dog again and again.'; // 60 characters
const CHUNKS = 3; // aimock's chunks of 20 characters
const PAUSE_MS = 8; // -l: aimock's pause between chunks
const N = 9;

let daemon, api, aimock, dir;

before(async () => {
	dir = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-aimock-llm-'));
	const fixtures = path.join(dir, 'fixtures.json');
	fs.writeFileSync(fixtures, JSON.stringify({ fixtures: [{ match: {}, response: { content: TEXT } }] }));
	aimock = await startAimock(fixtures, PAUSE_MS);
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dir]);
	api = daemonApi(daemon);
});

after(async () => {
	aimock.proc.kill('SIGTERM');
	await aimock.exited;
	const code = await stop(daemon);
	fs.rmSync(dir, { recursive: true, force: true });
	assert.equal(code, 0, 'headroomd exit status');
});

function spec(endpoint, stream, transport, sessions) {
	const workload = { isl: { mean: 8, stddev: 0 }, osl: { mean: 16, stddev: 0 }, seed: 3,
		token_count: { osl: 'chunks' } };
	if (sessions) Object.assign(workload, { sessions: { turns: { mean: 2 } },
		system_prompt: { tokens: 4 } });
	return {
		name: `aimock ${endpoint}`,
		target: { url: `http://${aimock.addr}`, model: 'gpt-4o', endpoint, stream, transport,
			timeout_s: 30 },
		workload,
		load: { mode: 'concurrency', concurrency: 3, requests: N },
		workers: 1,
	};
}

function allValid(run, recs) {
	assert.equal(run.summary.counts.valid, N, JSON.stringify(run.summary.errors));
	assert.equal(recs.length, N);
	for (const r of recs) {
		assert.equal(r.status, 200, JSON.stringify(r));
		assert.equal(r.error, '', r.error_message);
		assert.ok(r.valid);
	}
}

for (const endpoint of ['responses', 'messages']) {
	for (const transport of ['native', 'curl']) {
		test(`${endpoint}, streamed (${transport})`, async () => {
			const { run, recs } = await api.runToEnd(spec(endpoint, true, transport));
			allValid(run, recs);
			for (const r of recs) {
				assert.equal(r.n_chunks, CHUNKS, JSON.stringify(r));
				assert.equal(r.osl, CHUNKS);
				assert.equal(r.osl_source, 'chunks');
				// aimock writes the last chunk at least (CHUNKS - 1) pauses after
				// the first, which it writes after the request came: the last
				// arrival is that late however the reads bunch on a busy machine
				const off = r.chunk_offsets_ns;
				const last = off[off.length - 1] / 1e6;
				assert.ok(last >= (CHUNKS - 1) * (PAUSE_MS - 1), `last chunk after ${last} ms`);
				for (let i = 1; i < off.length; i++) assert.ok(off[i] >= off[i - 1]);
				assert.ok(r.request_latency >= r.time_to_first_token);
			}
		});

		test(`${endpoint}, one answer (${transport})`, async () => {
			const { run, recs } = await api.runToEnd(spec(endpoint, false, transport));
			allValid(run, recs);
			for (const r of recs) {
				assert.equal(r.n_chunks, 0);
				assert.equal(r.time_to_first_token, null);
			}
		});
	}

	test(`${endpoint}, sessions with a system prompt`, async () => {
		const { run, recs } = await api.runToEnd(spec(endpoint, true, 'native', true));
		allValid(run, recs);
		assert.ok(recs.some((r) => r.turn === 1), 'second turns ran');
	});
}
