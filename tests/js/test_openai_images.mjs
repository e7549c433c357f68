// test_openai_images.mjs - the official `openai` npm client's image methods
// (client.images.generate and client.images.edit, whole and streamed) against
// headroom-mock's
// /v1/images/generations and /v1/images/edits: the pictures come back as
// real PNGs of the size asked, with usage, as the client reads them; the
// picture the mock received (--media-dir) is the one the client sent.
//
// Run: HEADROOM_BIN=build/bin tests/js/run.sh tests/js/test_openai_images.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import OpenAI, { toFile } from 'openai';

import { start, stop } from './harness.mjs';

const MODEL = 'mock-model';

// A PNG's width and height, after checking that its pixel data inflates
// to height rows of 1 + 3 x width bytes (8-bit RGB).
function pngSize(buf) {
	assert.deepEqual([...buf.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
	let pos = 8, w = 0, h = 0;
	const idat = [];
	while (pos < buf.length) {
		const n = buf.readUInt32BE(pos);
		const kind = buf.toString('latin1', pos + 4, pos + 8);
		const body = buf.subarray(pos + 8, pos + 8 + n);
		if (kind === 'IHDR') {
			w = body.readUInt32BE(0);
			h = body.readUInt32BE(4);
		} else if (kind === 'IDAT') {
			idat.push(body);
		} else if (kind === 'IEND') {
			break;
		}
		pos += 12 + n;
	}
	assert.equal(zlib.inflateSync(Buffer.concat(idat)).length, h * (1 + 3 * w));
	return [w, h];
}

// A small valid PNG: w x h grey pixels.
function png(w, h) {
	const crcTable = Array.from({ length: 256 }, (_, n) => {
		let c = n;
		for (let k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
		return c >>> 0;
	});
	const crc = (b) => {
		let c = 0xffffffff;
		for (const x of b)
			c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
		return (c ^ 0xffffffff) >>> 0;
	};
	const chunk = (kind, data) => {
		const len = Buffer.alloc(4);
		len.writeUInt32BE(data.length);
		const kd = Buffer.concat([Buffer.from(kind, 'latin1'), data]);
		const c = Buffer.alloc(4);
		c.writeUInt32BE(crc(kd));
		return Buffer.concat([len, kd, c]);
	};
	const ihdr = Buffer.alloc(13);
	ihdr.writeUInt32BE(w, 0);
	ihdr.writeUInt32BE(h, 4);
	ihdr[8] = 8;
	ihdr[9] = 2;
	const raw = Buffer.alloc(h * (1 + 3 * w), 0x80);
	for (let y = 0; y < h; y++)
		raw[y * (1 + 3 * w)] = 0;
	return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
		chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

let mock, client, media;

before(async () => {
	media = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-js-images-'));
	mock = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet', '--ttft-ms', '5',
		'--itl-ms', '0', '--media-dir', media]);
	client = new OpenAI({ baseURL: `http://${mock.addr}/v1`, apiKey: 'x', maxRetries: 0,
		timeout: 30000 });
});

after(async () => {
	if (mock)
		assert.equal(await stop(mock), 0);
	fs.rmSync(media, { recursive: true, force: true });
});

test('images.generate: n pictures of the size asked', async () => {
	const r = await client.images.generate({
		model: MODEL,
		prompt: 'a lighthouse on a quiet coast',
		n: 3,
		size: '64x48',
		response_format: 'b64_json',
	});
	assert.equal(r.data.length, 3);
	const pics = r.data.map((d) => Buffer.from(d.b64_json, 'base64'));
	for (const p of pics)
		assert.deepEqual(pngSize(p), [64, 48]);
	assert.equal(new Set(pics.map((p) => p.toString('base64'))).size, 3); // distinct pictures
	assert.equal(r.usage.input_tokens, 6);
	assert.equal(r.usage.output_tokens, 3 * 16);
	assert.ok(r.created > 0);
	assert.deepEqual(fs.readdirSync(media), []);
});

test('images.generate streamed: partial pictures, then the completed one', async () => {
	const stream = await client.images.generate({
		model: MODEL,
		prompt: 'a lighthouse',
		size: '24x24',
		stream: true,
		partial_images: 2,
	});
	const types = [];
	let done = null;
	for await (const ev of stream) {
		types.push(ev.type);
		assert.deepEqual(pngSize(Buffer.from(ev.b64_json, 'base64')), [24, 24]);
		if (ev.type === 'image_generation.partial_image')
			assert.equal(ev.partial_image_index, types.length - 1);
		else
			done = ev;
	}
	assert.deepEqual(types, ['image_generation.partial_image', 'image_generation.partial_image',
		'image_generation.completed']);
	assert.equal(done.usage.output_tokens, 16);
	assert.equal(done.usage.input_tokens, 2);
});

test('images.edit: the picture uploaded, a picture back', async () => {
	const upload = png(20, 10);
	const r = await client.images.edit({
		model: MODEL,
		image: await toFile(upload, 'image.png', { type: 'image/png' }),
		prompt: 'make the sky blue',
		size: '32x32',
		response_format: 'b64_json',
	});
	assert.equal(r.data.length, 1);
	assert.deepEqual(pngSize(Buffer.from(r.data[0].b64_json, 'base64')), [32, 32]);
	assert.equal(r.usage.input_tokens, 4 + 256); // the prompt's words and the picture
	const files = fs.readdirSync(media);
	assert.equal(files.length, 1);
	assert.match(files[0], /\.edit\.png$/);
	assert.deepEqual(fs.readFileSync(path.join(media, files[0])), upload);
	fs.unlinkSync(path.join(media, files[0]));
});

test('images.edit streamed: partial pictures, then the completed one', async () => {
	const upload = png(12, 12);
	const stream = await client.images.edit({
		model: MODEL,
		image: await toFile(upload, 'image.png', { type: 'image/png' }),
		prompt: 'make it blue',
		size: '16x16',
		stream: true,
		partial_images: 1,
	});
	const types = [];
	let done = null;
	for await (const ev of stream) {
		types.push(ev.type);
		assert.deepEqual(pngSize(Buffer.from(ev.b64_json, 'base64')), [16, 16]);
		if (ev.type === 'image_edit.completed')
			done = ev;
		else
			assert.equal(ev.partial_image_index, 0);
	}
	assert.deepEqual(types, ['image_edit.partial_image', 'image_edit.completed']);
	assert.equal(done.usage.output_tokens, 16);
	assert.equal(done.usage.input_tokens, 3 + 256); // the prompt's words and the picture
	const files = fs.readdirSync(media);
	assert.equal(files.length, 1);
	assert.deepEqual(fs.readFileSync(path.join(media, files[0])), upload);
	fs.unlinkSync(path.join(media, files[0]));
});

test('what the mock does not do is a 400 the client raises', async () => {
	await assert.rejects(client.images.generate({ model: MODEL, prompt: 'x', n: 11 }),
		(e) => e.status === 400 && /'n'/.test(e.message));
	await assert.rejects(
		client.images.generate({ model: MODEL, prompt: 'x', response_format: 'url' }),
		(e) => e.status === 400 && /b64_json/.test(e.message));
	await assert.rejects(
		client.images.edit({
			model: MODEL,
			image: await toFile(Buffer.from('GIF89a'), 'a.gif', { type: 'image/gif' }),
			prompt: 'x',
		}),
		(e) => e.status === 400 && /PNG or JPEG/.test(e.message));
});
