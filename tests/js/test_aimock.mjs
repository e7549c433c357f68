// test_aimock.mjs - headroom's endpoint types against a third-party server:
// aimock (@copilotkit/aimock, MIT), an independent mock of the OpenAI and
// Anthropic APIs, serves every request from one fixture, split into chunks
// of 20 characters with a fixed pause between them. Each run must count
// every request valid, see exactly the chunks aimock sends, and take no
// less time than its pauses; what aimock does not stream is one piece.
// Covered: chat (streamed and whole), embeddings, audio transcription
// (streamed transcript events and a whole answer; one WAV clip uploaded),
// image generation and edit (the pictures aimock answers counted). The
// Responses and Messages types are in test_aimock_llm.mjs.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_aimock.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { daemonApi, start, startAimock, stop } from './harness.mjs';

const TEXT = 'The quick brown fox jumps over the lazy dog again and again.'; // 60 characters
const CHUNK = 20; // aimock's default chunk size: TEXT is 3 chunks
const PAUSE_MS = 8; // -l: aimock's pause between chunks
const N = 12;
// a 1x1 PNG: what aimock answers for a picture (two of them an answer)
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

let daemon, api, aimock, dir;

before(async () => {
	dir = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-aimock-'));
	const fixtures = path.join(dir, 'fixtures.json');
	fs.writeFileSync(fixtures, JSON.stringify({
		fixtures: [
			{ match: { endpoint: 'embedding' }, response: { embedding: [0.25, -0.5, 0.125, 1] } },
			{ match: { endpoint: 'transcription' }, response: { transcription: { text: TEXT } } },
			{ match: { endpoint: 'image' }, response: { images: [{ b64Json: PNG }, { b64Json: PNG }] } },
			{ match: {}, response: { content: TEXT } },
		],
	}));
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

function spec(endpoint, stream, transport, workload = {}) {
	return {
		name: `aimock ${endpoint}`,
		target: { url: `http://${aimock.addr}`, model: 'gpt-4o', endpoint, stream, transport,
			timeout_s: 30 },
		workload: { isl: { mean: 8, stddev: 0 }, osl: { mean: 16, stddev: 0 }, seed: 3, ...workload },
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

// A streamed generation: aimock's chunks, each a content-bearing chunk.
// aimock pauses PAUSE_MS before each chunk after the first, so the last one
// cannot arrive sooner than those pauses after the first byte was asked
// for; how close together they arrive depends on when the client reads
// (a busy machine may read them in one go), so only that bound is judged.
function checkStreamed(recs) {
	const chunks = Math.ceil(TEXT.length / CHUNK);
	for (const r of recs) {
		assert.equal(r.n_chunks, chunks, JSON.stringify(r));
		const last = r.chunk_offsets_ns[chunks - 1] / 1e6;
		assert.ok(last >= (chunks - 1) * (PAUSE_MS - 1), `last chunk after only ${last} ms`);
		assert.ok(r.time_to_first_token > 0);
		assert.ok(r.request_latency >= last - 0.001);
	}
}

for (const transport of ['native', 'curl']) {
	test(`chat, streamed (${transport})`, async () => {
		const { run, recs } = await api.runToEnd(spec('chat', true, transport));
		allValid(run, recs);
		checkStreamed(recs);
	});

	test(`chat, one answer (${transport})`, async () => {
		const { run, recs } = await api.runToEnd(spec('chat', false, transport));
		allValid(run, recs);
		for (const r of recs) {
			assert.equal(r.n_chunks, 0, 'an answer in one piece has no stream chunks');
			assert.equal(r.time_to_first_token, null);
			assert.ok(r.request_latency > 0);
		}
	});

	test(`embeddings (${transport})`, async () => {
		const { run, recs } = await api.runToEnd(spec('embeddings', false, transport));
		allValid(run, recs);
		for (const r of recs) {
			assert.equal(r.n_chunks, 1);
			assert.equal(r.osl, 0, 'embeddings generate nothing');
		}
	});

	// aimock streams a transcript (transcript.text.delta events, 20
	// characters each) for models other than whisper-1, and answers whole
	// for whisper-1
	test(`audio transcription, streamed (${transport})`, async () => {
		const sp = spec('audio_transcription', true, transport,
			{ audio: { duration_s: 0.5, sample_rate: 8000 } });
		const { run, recs } = await api.runToEnd(sp);
		allValid(run, recs);
		checkStreamed(recs);
		for (const r of recs) {
			assert.equal(r.audio_in, 1);
			assert.equal(r.media_bytes_in, 44 + 2 * 4000, 'one half-second 8 kHz 16-bit WAV');
		}
	});

	test(`audio transcription, whole (${transport})`, async () => {
		const sp = spec('audio_transcription', false, transport,
			{ audio: { duration_s: 0.5, sample_rate: 8000 } });
		sp.target.model = 'whisper-1';
		const { run, recs } = await api.runToEnd(sp);
		allValid(run, recs);
		for (const r of recs) {
			assert.equal(r.audio_in, 1);
			assert.ok(r.request_latency > 0);
		}
	});

	test(`image generation and edit (${transport})`, async () => {
		for (const endpoint of ['image_generation', 'image_edit']) {
			const sp = spec(endpoint, false, transport,
				endpoint === 'image_edit' ? { images: { width: 32, height: 32 } } : {});
			const { run, recs } = await api.runToEnd(sp);
			allValid(run, recs);
			for (const r of recs) {
				assert.equal(r.images_out, 2, `${endpoint}: aimock's two pictures`);
				assert.ok(r.bytes_out > 2 * PNG.length, `${endpoint}: the answer's bytes`);
				assert.ok(r.request_latency > 0);
				if (endpoint === 'image_edit')
					assert.equal(r.images_in, 1);
			}
		}
	});
}
