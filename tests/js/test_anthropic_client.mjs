// test_anthropic_client.mjs - the official `@anthropic-ai/sdk` client against
// headroom-mock's /v1/messages: messages.create whole and streamed (the raw
// events in order), messages.stream (the SDK's accumulating helper, with a
// thinking block from --reasoning-tokens), and the x-api-key check of
// --api-key. If this client reads the mock's Messages API, real client code
// will too.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_anthropic_client.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { start, stop } from './harness.mjs';

const KEY = 'mock-key';
const words = (s) => s.split(/\s+/).filter(Boolean);

let mock;
let thinking;
const client = (m, apiKey = KEY) =>
	new Anthropic({ baseURL: `http://${m.addr}`, apiKey, maxRetries: 0, timeout: 30000 });

before(async () => {
	mock = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet', '--api-key', KEY,
		'--ttft-ms', '10', '--itl-ms', '2']);
	thinking = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet',
		'--reasoning-tokens', '3']);
});

after(async () => {
	for (const m of [mock, thinking]) if (m) assert.equal(await stop(m), 0);
});

const request = (extra = {}) => ({
	model: 'mock-model',
	max_tokens: 6,
	system: 'answer in a few words',
	messages: [
		{ role: 'user', content: 'one two three' },
		{ role: 'assistant', content: 'four five' },
		{ role: 'user', content: [{ type: 'text', text: 'six seven' }] },
	],
	...extra,
});
// the mock's prompt count: the system prompt and every message, in words
const PROMPT_WORDS = 5 + 3 + 2 + 2;

test('messages.create, not streamed', async () => {
	const msg = await client(mock).messages.create(request());
	assert.equal(msg.type, 'message');
	assert.equal(msg.role, 'assistant');
	assert.equal(msg.model, 'mock-model');
	assert.equal(msg.stop_reason, 'max_tokens');
	assert.equal(msg.content.length, 1);
	assert.equal(msg.content[0].type, 'text');
	assert.equal(words(msg.content[0].text).length, 6);
	assert.deepEqual(msg.usage, { input_tokens: PROMPT_WORDS, output_tokens: 6 });
});

test('messages.create streamed: the events in order', async () => {
	const stream = await client(mock).messages.create(request({ stream: true }));
	const types = [];
	let text = '';
	let usage = {};
	for await (const ev of stream) {
		types.push(ev.type);
		if (ev.type === 'message_start') usage.input = ev.message.usage.input_tokens;
		if (ev.type === 'content_block_delta') {
			assert.equal(ev.delta.type, 'text_delta');
			text += ev.delta.text;
		}
		if (ev.type === 'message_delta') {
			usage.output = ev.usage.output_tokens;
			assert.equal(ev.delta.stop_reason, 'max_tokens');
		}
	}
	// (the SDK drops ping events)
	assert.deepEqual(types, ['message_start', 'content_block_start',
		...Array(6).fill('content_block_delta'), 'content_block_stop', 'message_delta',
		'message_stop']);
	assert.equal(words(text).length, 6);
	assert.deepEqual(usage, { input: PROMPT_WORDS, output: 6 });
});

test('messages.stream with a thinking block', async () => {
	const stream = client(thinking).messages.stream(request());
	const deltas = [];
	stream.on('thinking', (d) => deltas.push(['thinking', d]));
	stream.on('text', (d) => deltas.push(['text', d]));
	const msg = await stream.finalMessage();
	assert.deepEqual(msg.content.map((b) => b.type), ['thinking', 'text']);
	assert.equal(words(msg.content[0].thinking).length, 3);
	assert.equal(words(msg.content[1].text).length, 3);
	assert.deepEqual(deltas.map((d) => d[0]), ['thinking', 'thinking', 'thinking', 'text',
		'text', 'text']);
	assert.equal(msg.usage.output_tokens, 6);
	assert.equal(msg.usage.input_tokens, PROMPT_WORDS);
	// the whole answer says the same
	const whole = await client(thinking).messages.create(request());
	assert.deepEqual(whole.content.map((b) => b.type), ['thinking', 'text']);
	assert.equal(whole.content[1].text, msg.content[1].text);
});

test('a wrong key is a 401, a bad body a 400', async () => {
	await assert.rejects(client(mock, 'wrong').messages.create(request()),
		(e) => e instanceof Anthropic.AuthenticationError && e.status === 401);
	await assert.rejects(client(mock).messages.create(request({ messages: [] })),
		(e) => e instanceof Anthropic.BadRequestError && e.status === 400);
});
