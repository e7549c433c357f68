// test_openai_client.mjs - the official `openai` npm client against
// headroom-mock: if this client can list models, complete, and stream chat
// and legacy completions (with the usage chunk) from the mock, real client
// code will work against it too.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_openai_client.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.HEADROOM_BIN || path.join(here, '..', '..', 'build', 'bin');
const mockPath = path.join(bin, 'headroom-mock');
const MODEL = 'mock-model';

const words = (s) => s.split(/\s+/).filter(Boolean);

// Start headroom-mock on a free port; resolves once it prints its address.
function startMock(args = []) {
	return new Promise((resolve, reject) => {
		const proc = spawn(mockPath, ['--listen', '127.0.0.1:0', '--quiet', ...args], {
			stdio: ['ignore', 'pipe', 'inherit'],
		});
		const exited = new Promise((res) => proc.once('exit', (code, sig) => res({ code, sig })));
		const timer = setTimeout(() => {
			proc.kill('SIGKILL');
			reject(new Error('headroom-mock did not start'));
		}, 30000);
		proc.once('error', (e) => {
			clearTimeout(timer);
			reject(e);
		});
		exited.then(({ code, sig }) => {
			clearTimeout(timer);
			reject(new Error(`headroom-mock exited early: ${code ?? sig}`));
		});
		const lines = readline.createInterface({ input: proc.stdout });
		lines.once('line', (line) => {
			clearTimeout(timer);
			const m = /^listening on (.+):(\d+)$/.exec(line);
			if (!m) {
				proc.kill('SIGKILL');
				reject(new Error(`unexpected first line: ${line}`));
				return;
			}
			const port = Number(m[2]);
			const client = new OpenAI({
				baseURL: `http://127.0.0.1:${port}/v1`,
				apiKey: 'x',
				maxRetries: 0,
				timeout: 30000,
			});
			resolve({ proc, exited, port, client });
		});
	});
}

// SIGTERM and require a clean exit (status 0: under AddressSanitizer also
// no leaks).
async function stopMock(m) {
	if (!m) return;
	m.proc.kill('SIGTERM');
	const kill = setTimeout(() => m.proc.kill('SIGKILL'), 10000);
	const { code, sig } = await m.exited;
	clearTimeout(kill);
	assert.equal(code, 0, `headroom-mock exited with ${code ?? sig}`);
}

let mock;
let delayed;

before(async () => {
	mock = await startMock();
	delayed = await startMock(['--ttft-ms', '20', '--itl-ms', '5', '--tokens-per-chunk', '2']);
});

after(async () => {
	await stopMock(mock);
	await stopMock(delayed);
});

test('lists and retrieves the model', async () => {
	const ids = [];
	for await (const model of mock.client.models.list()) ids.push(model.id);
	assert.deepEqual(ids, [MODEL]);
	const model = await mock.client.models.retrieve(MODEL);
	assert.equal(model.id, MODEL);
	assert.equal(model.object, 'model');
});

test('non-streamed chat completion', async () => {
	const res = await mock.client.chat.completions.create({
		model: MODEL,
		messages: [
			{ role: 'system', content: 'be brief' },
			{ role: 'user', content: 'hello there mock' },
		],
		max_tokens: 12,
	});
	assert.equal(res.object, 'chat.completion');
	assert.equal(res.model, MODEL);
	assert.equal(res.choices.length, 1);
	assert.equal(res.choices[0].message.role, 'assistant');
	assert.equal(res.choices[0].finish_reason, 'length');
	assert.equal(words(res.choices[0].message.content).length, 12);
	assert.deepEqual(res.usage, { prompt_tokens: 5, completion_tokens: 12, total_tokens: 17 });

	const res2 = await mock.client.chat.completions.create({
		model: MODEL,
		messages: [{ role: 'user', content: 'hi' }],
		max_tokens: 3,
		max_completion_tokens: 8,
	});
	assert.equal(res2.usage.completion_tokens, 8);
});

async function streamChat(client, maxTokens) {
	const stream = await client.chat.completions.create({
		model: MODEL,
		messages: [{ role: 'user', content: 'tell me a story' }],
		max_tokens: maxTokens,
		stream: true,
		stream_options: { include_usage: true },
	});
	let content = '';
	let role = null;
	let finish = null;
	let usage = null;
	let chunks = 0;
	for await (const chunk of stream) {
		assert.equal(chunk.object, 'chat.completion.chunk');
		assert.equal(usage, null, 'nothing may follow the usage chunk');
		if (chunk.usage) {
			assert.deepEqual(chunk.choices, []);
			usage = chunk.usage;
			continue;
		}
		const choice = chunk.choices[0];
		if (choice.delta.role) role = choice.delta.role;
		if (choice.delta.content) {
			content += choice.delta.content;
			chunks++;
		}
		if (choice.finish_reason) finish = choice.finish_reason;
	}
	return { content, role, finish, usage, chunks };
}

test('streamed chat completion with the usage chunk', async () => {
	const r = await streamChat(mock.client, 20);
	assert.equal(r.role, 'assistant');
	assert.equal(words(r.content).length, 20);
	assert.equal(r.chunks, 20);
	assert.equal(r.finish, 'length');
	assert.ok(r.usage, 'the usage chunk arrives');
	assert.deepEqual(r.usage, { prompt_tokens: 4, completion_tokens: 20, total_tokens: 24 });
});

test('streamed chat completion from a delayed mock', async () => {
	const t0 = performance.now();
	const r = await streamChat(delayed.client, 9);
	const ms = performance.now() - t0;
	assert.equal(words(r.content).length, 9);
	assert.equal(r.chunks, 5); // two tokens a chunk
	assert.equal(r.usage.completion_tokens, 9);
	assert.ok(ms >= 20 + 4 * 5 - 2, `took ${ms} ms`);
});

test('streamed legacy completion', async () => {
	const stream = await mock.client.completions.create({
		model: MODEL,
		prompt: 'once upon a time',
		max_tokens: 7,
		stream: true,
		stream_options: { include_usage: true },
	});
	let text = '';
	let finish = null;
	let usage = null;
	let pieces = 0;
	for await (const chunk of stream) {
		assert.equal(chunk.object, 'text_completion');
		if (chunk.usage) {
			usage = chunk.usage;
			continue;
		}
		text += chunk.choices[0].text;
		pieces++;
		if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
	}
	assert.equal(words(text).length, 7);
	assert.equal(pieces, 7);
	assert.equal(finish, 'length');
	assert.deepEqual(usage, { prompt_tokens: 4, completion_tokens: 7, total_tokens: 11 });

	const plain = await mock.client.completions.create({
		model: MODEL,
		prompt: 'once upon a time',
		max_tokens: 7,
	});
	assert.equal(plain.choices[0].text, text, 'same text streamed or not');
});

test('errors reach the client as APIError', async () => {
	await assert.rejects(
		mock.client.chat.completions.create({
			model: MODEL,
			messages: [{ role: 'user', content: 'x' }],
			max_tokens: -1,
		}),
		(err) => {
			assert.ok(err instanceof OpenAI.BadRequestError, String(err));
			assert.equal(err.status, 400);
			assert.match(err.message, /max_tokens/);
			return true;
		},
	);
});
