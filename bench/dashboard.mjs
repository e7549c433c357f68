// dashboard.mjs - a run's dashboard page over a 1,000,000-request run: the
// page itself in Chromium until its last chart is drawn, first on a daemon
// just started (cold: every answer computed from the records) and again
// (warm: the finished run's answers kept in memory, server/dashcache.h);
// then the time and bytes of each API call the page makes, and all of them
// at once as the page makes them (issue: usable within 2 s, a few
// megabytes at most).
//
// Run:   node bench/dashboard.mjs [N] [TOKENS]      (default 1000000 16)
// Needs: headroomd, headroom-mock and hr-bench-records in $HEADROOM_BIN
//        (default build-bench/bin: bench/build.sh), tests/browser's npm
//        packages (tests/browser/run.sh installs them), /usr/bin/chromium
//        ($HEADROOM_CHROMIUM), ~0.3 KiB of disk per record in $BENCH_DIR
//        (default /tmp).
// Steps: a real 4-request run against headroom-mock makes the run row, its
// spec and summary; hr-bench-records (bench/gen_records.c) replaces its
// records with N synthetic ones (500 sends/s, so 1,000,000 span 2,000 s);
// the daemon is restarted on that store and measured. The summary shown is
// still the 4-request run's (the summary is not what is measured here).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { start, stop } from '../tests/js/harness.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.HEADROOM_BIN || path.join(root, 'build-bench', 'bin');
const n = Number(process.argv[2] || 1000000), tokens = Number(process.argv[3] || 16);
const work = fs.mkdtempSync(path.join(process.env.BENCH_DIR || os.tmpdir(), 'hr-dash-bench-'));
const { chromium } = await import(path.join(root, 'tests/browser/node_modules/playwright-core/index.mjs'));

// CPU seconds (user + system) a process has used, from /proc.
function cpu(pid) {
	const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
	return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

async function time(fn) {
	const t = performance.now();
	const v = await fn();
	return [performance.now() - t, v];
}

try {
	const mock = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet']);
	let daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', work]);
	let api = `http://${daemon.addr}/api/v1`;
	const spec = { name: 'dashboard-bench', target: { url: `http://${mock.addr}`, model: 'm', endpoint: 'chat', stream: true },
		workload: { isl: { mean: 128, stddev: 0 }, osl: { mean: tokens, stddev: 0 } },
		load: { mode: 'concurrency', concurrency: 4, requests: 4 }, workers: 1 };
	const r = await fetch(`${api}/runs`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(spec) });
	const id = (await r.json()).id;
	for (;;) {
		const run = await (await fetch(`${api}/runs/${id}`)).json();
		if (run.state === 'succeeded') break;
		if (['failed', 'cancelled', 'interrupted'].includes(run.state)) throw new Error(`run ${run.state}`);
		await new Promise((res) => setTimeout(res, 100));
	}
	await stop(daemon);
	await stop(mock);
	const [genMs] = await time(() => execFileSync(path.join(bin, 'hr-bench-records'),
		[path.join(work, 'headroom.db'), String(id), String(n), String(tokens)], { stdio: 'inherit' }));
	console.log(`generated ${n} records of ${tokens} tokens in ${(genMs / 1000).toFixed(1)} s`);
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', work]);
	api = `http://${daemon.addr}/api/v1`;
	const run = await (await fetch(`${api}/runs/${id}`)).json();
	const browser = await chromium.launch({ executablePath: process.env.HEADROOM_CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run', '--disable-background-networking',
			'--disable-component-update', '--disable-sync'] });
	const pageLoad = async (label) => {
		const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
		const sizes = [];
		page.on('requestfinished', (q) => sizes.push(q.sizes().then((z) => z.responseBodySize)));
		const c0 = cpu(daemon.proc.pid);
		const [pageMs] = await time(async () => {
			await page.goto(`http://${daemon.addr}/runs/${id}`);
			await page.waitForFunction(() => document.querySelectorAll('#cdfs canvas').length >= 3 &&
				document.querySelectorAll('#timeseries canvas').length >= 6, null, { timeout: 120000 });
		});
		const bytes = (await Promise.all(sizes)).reduce((a, b) => a + b, 0);
		console.log(`the page in Chromium, ${label}, to its last chart: ${pageMs.toFixed(0)} ms, ` +
			`${((cpu(daemon.proc.pid) - c0) * 1000).toFixed(0)} ms daemon CPU, ${bytes} bytes ` +
			`transferred (the page, its scripts and styles included); load average ${os.loadavg()[0].toFixed(2)}`);
		await page.close();
	};
	await pageLoad('cold (the daemon just started)');
	await pageLoad('warm (again)');
	// the calls view_run.js makes for a finished run
	const calls = [`/runs/${id}`, `/runs/${id}/timeseries?buckets=200`,
		`/runs/${id}/requests?order=slowest&limit=15`, `/runs/${id}/requests?order=failed&limit=15`,
		`/runs/${id}/requests?order=seq&limit=25&from=0/0`, `/runs/${id}/telemetry`, `/runs/${id}/client`,
		`/runs/${id}/distribution?metric=time_to_first_token,scheduled_time_to_first_token,` +
		'inter_token_latency,request_latency,scheduled_request_latency&points=1000'];
	console.log(`run ${id}: ${n} records, state ${run.state}; each call alone, after the pages (so from memory where kept) (wall, daemon CPU, bytes):`);
	let total = 0;
	for (const c of calls) {
		const c0 = cpu(daemon.proc.pid);
		const [ms, body] = await time(async () => (await fetch(api + c)).arrayBuffer());
		const used = cpu(daemon.proc.pid) - c0;
		total += body.byteLength;
		console.log(`  ${ms.toFixed(0).padStart(6)} ms ${(used * 1000).toFixed(0).padStart(6)} ms CPU ` +
			`${String(body.byteLength).padStart(9)} B  ${c}`);
	}
	const c0 = cpu(daemon.proc.pid);
	const [all] = await time(() => Promise.all(calls.map(async (c) => (await fetch(api + c)).arrayBuffer())));
	console.log(`all at once, as the page asks: ${all.toFixed(0)} ms wall, ` +
		`${((cpu(daemon.proc.pid) - c0) * 1000).toFixed(0)} ms daemon CPU, ${total} bytes; ` +
		`load average ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} CPUs`);
	await browser.close();
	await stop(daemon);
} finally {
	fs.rmSync(work, { recursive: true, force: true });
}
