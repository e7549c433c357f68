// test_responses_client.mjs - the official `openai` client's Responses API
// against headroom-mock's /v1/responses: responses.create whole and streamed
// (the typed events in order, their sequence numbers, the completed
// response's usage), with instructions, a conversation as input items, and
// a reasoning summary from --reasoning-tokens. If this client reads the
// mock's Responses API, real client code will too.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_responses_client.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { start, stop } from './harness.mjs';

const words = (s) => s.split(/\s+/).filter(Boolean);

let mock;
let reasoning;
const client = (m) =>
	new OpenAI({ baseURL: `http://${m.addr}/v1`, apiKey: 'x', maxRetries: 0, timeout: 30000 });

before(async () => {
	mock = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet', '--ttft-ms', '10',
		'--itl-ms', '2']);
	reasoning = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet',
		'--reasoning-tokens', '2']);
});

after(async () => {
	for (const m of [mock, reasoning]) if (m) assert.equal(await stop(m), 0);
});

const request = (extra = {}) => ({
	model: 'mock-model',
	instructions: 'answer in a few words',
	input: [
		{ role: 'user', content: 'one two three' },
		{ role: 'assistant', content: 'four five' },
		{ role: 'user', content: [{ type: 'input_text', text: 'six seven' }] },
	],
	max_output_tokens: 5,
	...extra,
});
const PROMPT_WORDS = 5 + 3 + 2 + 2;

test('responses.create, not streamed', async () => {
	const r = await client(mock).responses.create(request());
	assert.equal(r.object, 'response');
	assert.equal(r.status, 'completed');
	assert.equal(r.model, 'mock-model');
	assert.equal(words(r.output_text).length, 5); // the SDK's own join of the output texts
	assert.equal(r.usage.input_tokens, PROMPT_WORDS);
	assert.equal(r.usage.output_tokens, 5);
	assert.equal(r.usage.total_tokens, PROMPT_WORDS + 5);
	// a plain string input
	const s = await client(mock).responses.create({ model: 'mock-model', input: 'a b c d' });
	assert.equal(s.usage.input_tokens, 4);
	assert.equal(s.usage.output_tokens, 16); // the mock's default length
});

test('responses.create streamed: the events in order', async () => {
	const stream = await client(mock).responses.create(request({ stream: true }));
	const types = [];
	const seqs = [];
	let text = '';
	let done;
	for await (const ev of stream) {
		types.push(ev.type);
		seqs.push(ev.sequence_number);
		if (ev.type === 'response.output_text.delta') text += ev.delta;
		if (ev.type === 'response.completed') done = ev.response;
	}
	assert.deepEqual(types, ['response.created', 'response.in_progress',
		'response.output_item.added', 'response.content_part.added',
		...Array(5).fill('response.output_text.delta'), 'response.output_text.done',
		'response.completed']);
	assert.deepEqual(seqs, types.map((_, i) => i));
	assert.equal(words(text).length, 5);
	assert.equal(done.output[0].content[0].text, text);
	assert.equal(done.usage.input_tokens, PROMPT_WORDS);
	assert.equal(done.usage.output_tokens, 5);
});

test('a reasoning summary before the text', async () => {
	const stream = await client(reasoning).responses.create(request({ stream: true }));
	const kinds = [];
	let done;
	for await (const ev of stream) {
		if (ev.type === 'response.reasoning_summary_text.delta') kinds.push('reasoning');
		if (ev.type === 'response.output_text.delta') kinds.push('text');
		if (ev.type === 'response.completed') done = ev.response;
	}
	assert.deepEqual(kinds, ['reasoning', 'reasoning', 'text', 'text', 'text']);
	assert.equal(done.usage.output_tokens_details.reasoning_tokens, 2);
	assert.deepEqual(done.output.map((o) => o.type), ['reasoning', 'message']);
	const whole = await client(reasoning).responses.create(request());
	assert.equal(words(whole.output_text).length, 3);
	assert.equal(whole.usage.output_tokens_details.reasoning_tokens, 2);
});

test('a bad body is a 400', async () => {
	await assert.rejects(client(mock).responses.create(request({ input: 7 })),
		(e) => e instanceof OpenAI.BadRequestError && e.status === 400);
});
