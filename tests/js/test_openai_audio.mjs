// test_openai_audio.mjs - the official `openai` npm client's audio
// transcription method (client.audio.transcriptions.create) against
// headroom-mock's /v1/audio/transcriptions: a whole answer and a stream of
// transcript.text.delta events ending with transcript.text.done, as the
// client reads them; the upload the mock received (--media-dir) is the
// file the client sent.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_openai_audio.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';

import { start, stop } from './harness.mjs';

const MODEL = 'mock-model';
const words = (s) => s.split(/\s+/).filter(Boolean);

// A 16-bit mono PCM WAV of `seconds` at `rate` (a quiet tone).
function wav(seconds, rate) {
	const n = Math.round(seconds * rate);
	const b = Buffer.alloc(44 + n * 2);
	b.write('RIFF', 0);
	b.writeUInt32LE(36 + n * 2, 4);
	b.write('WAVE', 8);
	b.write('fmt ', 12);
	b.writeUInt32LE(16, 16);
	b.writeUInt16LE(1, 20); // PCM
	b.writeUInt16LE(1, 22); // mono
	b.writeUInt32LE(rate, 24);
	b.writeUInt32LE(rate * 2, 28);
	b.writeUInt16LE(2, 32);
	b.writeUInt16LE(16, 34);
	b.write('data', 36);
	b.writeUInt32LE(n * 2, 40);
	for (let i = 0; i < n; i++)
		b.writeInt16LE(Math.round(3000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2);
	return b;
}

let mock, client, media;

before(async () => {
	media = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-js-audio-'));
	mock = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet', '--ttft-ms', '5',
		'--itl-ms', '1', '--media-dir', media]);
	client = new OpenAI({ baseURL: `http://${mock.addr}/v1`, apiKey: 'x', maxRetries: 0,
		timeout: 30000 });
});

after(async () => {
	if (mock)
		assert.equal(await stop(mock), 0);
	fs.rmSync(media, { recursive: true, force: true });
});

// The uploads the mock wrote since the last call.
function uploads() {
	const files = fs.readdirSync(media).sort();
	const out = files.map((f) => fs.readFileSync(path.join(media, f)));
	for (const f of files)
		fs.unlinkSync(path.join(media, f));
	return out;
}

test('a whole transcription', async () => {
	const clip = wav(2, 16000);
	const r = await client.audio.transcriptions.create({
		file: await toFile(clip, 'clip.wav', { type: 'audio/wav' }),
		model: MODEL,
		language: 'en',
		temperature: 0,
	});
	assert.equal(words(r.text).length, 6); // 3 words a second
	assert.equal(r.usage.type, 'tokens');
	assert.equal(r.usage.input_tokens, 100); // 50 audio tokens a second
	assert.equal(r.usage.output_tokens, 6);
	assert.deepEqual(uploads(), [clip]);
});

test('a streamed transcription', async () => {
	const clip = wav(1.5, 8000);
	const stream = await client.audio.transcriptions.create({
		file: await toFile(clip, 'clip.wav', { type: 'audio/wav' }),
		model: MODEL,
		stream: true,
	});
	const deltas = [];
	let done = null;
	for await (const ev of stream) {
		if (ev.type === 'transcript.text.delta')
			deltas.push(ev.delta);
		else if (ev.type === 'transcript.text.done')
			done = ev;
		else
			assert.fail(`unexpected event ${JSON.stringify(ev)}`);
	}
	assert.equal(deltas.length, 5); // ceil(1.5 x 3)
	assert.ok(done, 'no transcript.text.done event');
	assert.equal(done.text, deltas.join(''));
	assert.equal(done.usage.input_tokens, 75);
	assert.equal(done.usage.output_tokens, 5);
	assert.deepEqual(uploads(), [clip]);
});

test('a file the mock cannot read is a 400 the client raises', async () => {
	await assert.rejects(
		client.audio.transcriptions.create({
			file: await toFile(Buffer.from('not a wav file'), 'clip.mp3', { type: 'audio/mpeg' }),
			model: MODEL,
		}),
		(e) => e.status === 400 && /WAV/.test(e.message),
	);
	uploads();
});
