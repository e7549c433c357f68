// test_dashboard.mjs - the dashboard in Debian's Chromium (playwright-core)
// against a real headroomd seeded with real runs on two headroom-mocks (one
// failing 5% of its requests): each view renders without console errors,
// the numbers on the page are the API's, a CDF has one point per record,
// filters, compare and the request drill-down work, deep links load.
// Screenshots of each view go to $HEADROOM_SHOTS (ctest: the test's build
// directory), else the working directory.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { execFileSync, spawn } from 'node:child_process';
import readline from 'node:readline';
import { chromium } from 'playwright-core';
import { bin, daemonApi, start, stop } from '../js/harness.mjs';

const shots = process.env.HEADROOM_SHOTS || process.cwd();
const CHROMIUM = process.env.HEADROOM_CHROMIUM || '/usr/bin/chromium';
let mockA, mockB, daemon, api, browser, page, base;
const runs = {};
const problems = [];
let dataDir;

// headroom-mock with its DCGM-like page: both addresses, from its first two lines.
function startMockDcgm(args) {
	return new Promise((resolve, reject) => {
		const proc = spawn(path.join(bin, 'headroom-mock'), args, { stdio: ['ignore', 'pipe', 'inherit'] });
		const exited = new Promise((res) => proc.once('exit', (code, sig) => res(code ?? sig)));
		const lines = [];
		proc.once('error', reject);
		readline.createInterface({ input: proc.stdout }).on('line', (line) => {
			lines.push(line);
			if (lines.length !== 2) return;
			const a = /listening on (\S+:\d+)/.exec(lines[0]), d = /dcgm listening on (\S+:\d+)/.exec(lines[1]);
			if (!a || !d) reject(new Error(`unexpected lines of headroom-mock: ${lines.join(' | ')}`));
			else resolve({ proc, exited, addr: a[1], dcgm: d[1] });
		});
	});
}

function spec(mock, name, labels) {
	return {
		name, labels,
		telemetry: mock.dcgm ? { nvml: false, dcgm_urls: [`http://${mock.dcgm}/metrics`],
			metrics_urls: [`http://${mock.addr}/metrics`], interval_ms: 50 } : { nvml: false },
		target: { url: `http://${mock.addr}`, model: 'mock-model', endpoint: 'chat', stream: true },
		workload: { isl: { mean: 32, stddev: 0 }, osl: { mean: 16, stddev: 0 } },
		load: { mode: 'concurrency', concurrency: 4, requests: 160 },
		workers: 1,
	};
}

async function json(p) {
	const r = await api.call('GET', p);
	assert.equal(r.status, 200, r.text);
	return r.json();
}

before(async () => {
	dataDir = fs.mkdtempSync('/tmp/headroom-browser-');
	mockA = await start('headroom-mock', ['--listen', '127.0.0.1:0', '--quiet', '--ttft-ms', '4',
		'--itl-ms', '1']);
	mockB = await startMockDcgm(['--listen', '127.0.0.1:0', '--quiet', '--ttft-ms', '8',
		'--itl-ms', '1', '--fail-500', '0.05', '--fail-seed', '3', '--dcgm-listen', '127.0.0.1:0']);
	daemon = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dataDir]);
	api = daemonApi(daemon);
	// main2 repeats main's spec (the same fingerprint: a trend of two runs)
	for (const [key, mock, labels] of [['main', mockA, { branch: 'main' }],
		['feature', mockB, { branch: 'feature' }], ['main2', mockA, { branch: 'main' }]]) {
		const { run, recs } = await api.runToEnd(spec(mock, `dash-${key.replace('2', '')}`, labels));
		runs[key] = { run, recs, summary: await json(`/runs/${run.id}/summary`) };
	}
	browser = await chromium.launch({
		executablePath: CHROMIUM,
		args: ['--no-sandbox', '--headless', '--disable-gpu', '--no-first-run',
			'--disable-background-networking', '--disable-component-update', '--disable-sync'],
	});
	page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
	page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
	page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
	page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
	base = `http://${daemon.addr}`;
});

after(async () => {
	if (browser) await browser.close();
	for (const p of [daemon, mockA, mockB]) if (p) assert.equal(await stop(p), 0);
	fs.rmSync(dataDir, { recursive: true, force: true });
});

function noProblems() {
	assert.deepEqual(problems.splice(0), [], 'console errors, page errors or failed requests');
}

async function shot(name) {
	await page.screenshot({ path: path.join(shots, `dashboard-${name}.png`), fullPage: true });
}

test('runs list: every run with the API figures, sorting, filters', async () => {
	await page.goto(base + '/');
	await page.waitForSelector('#runs tbody tr');
	const ids = await page.$$eval('#runs tbody tr', (rows) => rows.map((r) => Number(r.dataset.run)));
	assert.deepEqual(ids, [runs.main2.run.id, runs.feature.run.id, runs.main.run.id]); // newest first
	// the trend per fingerprint: main and main2 share one, of two points
	assert.equal(runs.main.run.fingerprint, runs.main2.run.fingerprint);
	const fpSeries = await json(`/series?metric=time_to_first_token&stat=p99&fingerprint=${runs.main.run.fingerprint}&limit=20`);
	for (const k of ['main', 'main2'])
		assert.equal(await page.$eval(`#runs tr[data-run="${runs[k].run.id}"] svg`, (e) => Number(e.dataset.points)),
			fpSeries.points.length);
	assert.equal(fpSeries.points.length, 2);
	for (const { run, summary } of Object.values(runs))
		for (const [metric, stat] of [['time_to_first_token', 'p50'], ['time_to_first_token', 'p99'],
			['inter_token_latency', 'p50'], ['request_throughput', 'avg']]) {
			const v = await page.$eval(`#runs tr[data-run="${run.id}"] td[data-metric="${metric}.${stat}"]`,
				(td) => td.dataset.value);
			assert.equal(Number(v), summary.metrics[metric][stat], `${run.id} ${metric}.${stat}`);
		}
	const verdict = await page.$eval(`#runs tr[data-run="${runs.main.run.id}"]`, (tr) =>
		tr.children[tr.children.length - 2].textContent);
	assert.equal(verdict, runs.main.run.verdict);
	await shot('runs');
	// the dark theme: the page's colours change, and the choice is kept
	const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
	const light = await bg();
	await page.click('#theme');
	await page.waitForSelector('#runs tbody tr');
	assert.notEqual(await bg(), light);
	await shot('runs-dark');
	await page.reload();
	await page.waitForSelector('#runs tbody tr');
	assert.notEqual(await bg(), light, 'kept across a reload');
	await page.click('#theme');
	await page.waitForSelector('#runs tbody tr');
	assert.equal(await bg(), light);
	// keyboard: a focused run link opens with Enter
	await page.focus(`#runs tr[data-run="${runs.main.run.id}"] a`);
	await page.keyboard.press('Enter');
	await page.waitForURL(`${base}/runs/${runs.main.run.id}`);
	await page.waitForSelector('#cdfs canvas'); // its reads done before leaving
	await page.goto(base + '/');
	await page.waitForSelector('#runs tbody tr');
	// sort by TTFT p50, ascending: the faster mock's run first
	await page.click('button[title="sort by TTFT p50"]'); // -p50 first (descending)
	await page.waitForURL(/sort=-time_to_first_token.p50/);
	await page.waitForSelector('#runs tbody tr');
	const desc = await page.$$eval('#runs tbody tr', (rows) => rows.map((r) => Number(r.dataset.run)));
	const byP50 = Object.values(runs).sort((a, b) => b.summary.metrics.time_to_first_token.p50 -
		a.summary.metrics.time_to_first_token.p50 || b.run.id - a.run.id);
	assert.deepEqual(desc, byP50.map((x) => x.run.id));
	// filter by label
	await page.goto(base + '/');
	await page.fill('input[name=labels]', 'branch=feature');
	await page.click('form.filters button[type=submit]');
	await page.waitForURL(/labels=branch%3Dfeature/);
	await page.waitForFunction(() => document.querySelectorAll('#runs tbody tr').length === 1);
	const only = await page.$$eval('#runs tbody tr', (rows) => rows.map((r) => Number(r.dataset.run)));
	assert.deepEqual(only, [runs.feature.run.id]);
	await page.fill('input[name=labels]', 'branch=nowhere');
	await page.click('form.filters button[type=submit]');
	await page.waitForSelector('text=No run matches these filters.');
	noProblems();
});

test('compare: pick two runs, the delta table is the API answer', async () => {
	await page.goto(base + '/');
	await page.waitForSelector('#runs tbody tr');
	assert.equal(await page.isDisabled('#compare'), true);
	for (const k of ['main', 'feature'])
		await page.check(`#runs tr[data-run="${runs[k].run.id}"] input[type=checkbox]`);
	await page.click('#compare');
	const [a, b] = [runs.main.run.id, runs.feature.run.id];
	await page.waitForURL(`${base}/compare?base=${a}&head=${b}`);
	await page.waitForSelector('#compare-table tbody tr');
	await page.waitForSelector('#cdfs canvas');
	const c = await json(`/compare?base=${a}&head=${b}`);
	const rows = await page.$$eval('#compare-table tbody tr', (trs) => trs.map((tr) => ({
		key: tr.dataset.metric,
		verdict: tr.querySelector('[data-col=verdict]').textContent,
		cls: tr.querySelector('[data-col=verdict]').className,
	})));
	assert.deepEqual(rows.map((r) => r.key), c.metrics.map((m) => `${m.metric}.${m.stat}`));
	assert.deepEqual(rows.map((r) => r.verdict), c.metrics.map((m) => m.verdict));
	for (const r of rows) assert.equal(r.cls, r.verdict, 'coloured by its verdict');
	const diff = await page.$$eval('#spec-diff tbody tr td:first-child', (tds) => tds.map((t) => t.textContent));
	assert.ok(diff.includes('target.url'), diff.join(','));
	await shot('compare');
	noProblems();
});

test('trends: a figure over the runs as GET /series gives it; a label narrows it', async () => {
	await page.goto(`${base}/trends?metric=time_to_first_token&stat=p99`);
	await page.waitForSelector('#trend canvas');
	const s = await json('/series?metric=time_to_first_token&stat=p99');
	assert.equal(s.points.length, 3);
	const rows = await page.$$eval('#trend-points tbody tr', (trs) => trs.map((tr) =>
		[tr.dataset.key, Number(tr.children[3].dataset.value)]));
	assert.deepEqual(rows, s.points.map((p) => [p.key, p.value]));
	assert.equal(await page.$eval('#trend .chart', (c) => Number(c.dataset.points)), 3);
	await page.fill('input[name=labels]', 'branch=main');
	await page.click('form.filters button[type=submit]');
	await page.waitForURL(/labels=branch%3Dmain/);
	await page.waitForFunction(() => document.querySelectorAll('#trend-points tbody tr').length === 2);
	assert.deepEqual(await page.$$eval('#trend-points tbody tr', (trs) => trs.map((tr) => tr.dataset.key)),
		[String(runs.main.run.id), String(runs.main2.run.id)]);
	await shot('trends');
	noProblems();
});

test('throughput against speed per user: the picked runs and their Pareto front', async () => {
	await page.goto(base + '/');
	await page.waitForSelector('#runs tbody tr');
	for (const k of ['main', 'feature'])
		await page.check(`#runs tr[data-run="${runs[k].run.id}"] input[type=checkbox]`);
	await page.click('#pareto');
	await page.waitForURL(/\/pareto\?runs=\d+,\d+$/);
	await page.waitForSelector('#pareto canvas');
	const pts = [runs.main, runs.feature].map(({ run, summary }) => ({ id: run.id,
		x: summary.metrics.output_token_throughput.avg, y: summary.metrics.output_token_throughput_per_user.avg }));
	const beaten = (p) => pts.some((q) => q !== p && q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y));
	const shown = Object.fromEntries(await page.$$eval('#pareto-runs tbody tr', (trs) => trs.map((tr) =>
		[tr.dataset.run, tr.querySelector('[data-front]').dataset.front])));
	for (const p of pts) assert.equal(shown[p.id], String(!beaten(p)), `run ${p.id}`);
	await shot('pareto');
	noProblems();
});

test('one run: summary, time series, CDFs with a point per record, drill-down', async () => {
	const { run, recs, summary } = runs.feature;
	const urls = [];
	const onRequest = (q) => urls.push(q.url());
	page.on('request', onRequest);
	await page.goto(`${base}/runs/${run.id}`); // a deep link: the daemon serves the page
	await page.waitForSelector('#cdfs canvas');
	page.off('request', onRequest);
	// bounded answers only: the page never downloads every record
	assert.deepEqual(urls.filter((u) => /\/records/.test(u)), []);
	assert.ok(urls.some((u) => /\/distribution\?metric=time_to_first_token/.test(u)), urls.join(' '));
	assert.equal(await page.textContent('#state'), 'succeeded');
	for (const [metric, stat] of [['time_to_first_token', 'p50'], ['request_latency', 'p99'],
		['output_sequence_length', 'avg']]) {
		const v = await page.$eval(`#summary tr[data-metric="${metric}"] td[data-stat="${stat}"]`,
			(td) => td.dataset.value);
		assert.equal(Number(v), summary.metrics[metric][stat], `${metric}.${stat}`);
	}
	assert.equal(await page.textContent('#verdict'), summary.client.verdict);
	assert.equal(await page.textContent('#validity'), summary.validity.valid ? 'valid' : 'invalid');
	// the time series: one chart per figure, as many points as buckets
	const step = await page.$eval('#timeseries', (d) => d.dataset.step);
	const ts = await json(`/runs/${run.id}/timeseries?step_ms=${step}`);
	assert.ok(ts.buckets > 50 && ts.buckets <= 200, `${ts.buckets} buckets of ${step} ms`);
	const charts = await page.$$eval('#timeseries .chart', (cs) => cs.map((c) => [c.dataset.chart,
		Number(c.dataset.points), c.querySelectorAll('canvas').length]));
	assert.ok(charts.length >= 6, JSON.stringify(charts));
	for (const [name, points, canvases] of charts) {
		assert.equal(points, ts.buckets, name);
		assert.equal(canvases, 1, name);
	}
	assert.ok(charts.some(([n]) => n === 'Errors by kind'), 'the failed requests have a chart');
	// telemetry (the mock's DCGM and /metrics pages) and the workers' own
	// samples: one point per stored sample
	const tele = await json(`/runs/${run.id}/telemetry`);
	const cl = await json(`/runs/${run.id}/client`);
	const tcharts = Object.fromEntries(await page.$$eval('#telemetry .chart', (cs) => cs.map((c) =>
		[c.dataset.chart, Number(c.dataset.points)])));
	const samples = (name) => tele.samples.filter((x) => x.name === name && x.t_s !== null &&
		x.value !== null).length;
	assert.ok(samples('gpu.power_w') > 5, 'the DCGM page was scraped');
	assert.equal(tcharts['GPU power'], samples('gpu.power_w'));
	assert.equal(tcharts['GPU utilisation'], samples('gpu.util_pct'));
	assert.equal(tcharts['Server: requests running and waiting'],
		samples('server.requests_running') + samples('server.requests_waiting'));
	const ccharts = Object.fromEntries(await page.$$eval('#client .chart', (cs) => cs.map((c) =>
		[c.dataset.chart, Number(c.dataset.points)])));
	assert.equal(ccharts['Load generator: CPU (1 = one core)'],
		cl.samples.filter((x) => x.cpu !== null).length);
	assert.equal(ccharts['Workers: event loop busy'],
		cl.samples.filter((x) => x.source !== 'daemon' && x.loop_busy !== null).length);
	// CDFs: one point per valid profiling record having the metric
	const valid = recs.filter((r) => r.valid && r.phase === 'profiling');
	const count = (k) => valid.filter((r) => typeof r[k] === 'number').length;
	const cdf = Object.fromEntries(await page.$$eval('#cdfs .chart', (cs) => cs.map((c) =>
		[c.dataset.chart, c.dataset.points])));
	assert.equal(cdf['CDF: time to first token, plain and scheduled'],
		`${count('time_to_first_token')},${count('scheduled_time_to_first_token')}`);
	assert.equal(cdf['CDF: request latency, plain and scheduled'],
		`${count('request_latency')},${count('scheduled_request_latency')}`);
	assert.equal(count('time_to_first_token'), summary.metrics.time_to_first_token.count);
	// histograms: every value counted in one of the bins
	const hist = Object.fromEntries(await page.$$eval('#cdfs .chart[data-bins]', (cs) => cs.map((c) =>
		[c.dataset.chart, [Number(c.dataset.bins), Number(c.dataset.count), c.querySelectorAll('canvas').length]])));
	assert.deepEqual(hist['Histogram: time to first token'], [40, count('time_to_first_token'), 1]);
	assert.deepEqual(hist['Histogram: request latency'], [40, count('request_latency'), 1]);
	await page.check('#cdfs input[type=checkbox]'); // log scale redraws
	await shot('run');
	// drill-down: the slowest request, then a failed one
	const slowest = valid.reduce((a, r) => (r.request_latency > a.request_latency ? r : a));
	await page.click('#requests tbody tr:first-child');
	await page.waitForSelector('#request-detail');
	assert.equal(await page.textContent('#request-detail h3'), `Request ${slowest.worker}/${slowest.seq}`);
	const ticks = await page.$$eval('#request-detail .timeline i:not(.mark)', (is) => is.length);
	assert.equal(ticks, slowest.n_chunks);
	await shot('request');
	const failed = recs.find((r) => !r.valid);
	assert.ok(failed, 'the failing mock failed a request');
	await page.focus(`#requests tr[data-req="${failed.worker}/${failed.seq}"]`);
	await page.keyboard.press('Enter');
	await page.waitForSelector(`#request-detail h3:text("Request ${failed.worker}/${failed.seq}")`);
	assert.match(await page.textContent('#request-detail'), new RegExp(failed.error));
	// any request: every one, 25 a page in /records' order; page 2's third row opens
	const shown = () => page.$$eval('#all-requests tbody tr', (trs) => trs.map((tr) => tr.dataset.req));
	const key = (r) => `${r.worker}/${r.seq}`;
	assert.deepEqual(await shown(), recs.slice(0, 25).map(key));
	await page.click('#requests-next');
	await page.waitForFunction((k) => document.querySelector('#all-requests tbody tr')?.dataset.req === k,
		key(recs[25]));
	assert.deepEqual(await shown(), recs.slice(25, 50).map(key));
	assert.match(await page.textContent('#all-requests-page'), new RegExp(`26–50 of ${recs.length}`));
	const any = recs[27];
	await page.click(`#all-requests tr[data-req="${key(any)}"]`);
	await page.waitForSelector(`#request-detail h3:text("Request ${key(any)}")`);
	assert.equal(await page.$$eval('#request-detail .timeline i:not(.mark)', (is) => is.length), any.n_chunks);
	assert.ok(any.n_chunks > 0);
	// the last page, and back
	for (let i = 2; i * 25 < recs.length; i++) {
		await page.click('#requests-next');
		await page.waitForFunction((k) => document.querySelector('#all-requests tbody tr')?.dataset.req === k,
			key(recs[i * 25]));
	}
	assert.equal(await page.isDisabled('#requests-next'), true);
	assert.deepEqual(await shown(), recs.slice(Math.floor((recs.length - 1) / 25) * 25).map(key));
	await page.click('#requests-prev');
	await page.waitForFunction((k) => document.querySelector('#all-requests tbody tr')?.dataset.req === k,
		key(recs[(Math.floor((recs.length - 1) / 25) - 1) * 25]));
	noProblems();
});

test('report.html: one file that opens from disk with its charts', async () => {
	const { run, summary } = runs.feature;
	const r = await fetch(`${base}/api/v1/runs/${run.id}/report.html`);
	assert.equal(r.status, 200);
	assert.match(r.headers.get('content-disposition'), /^attachment; filename="headroom-run-\d+\.html"$/);
	const file = path.join(shots, `dashboard-report-run-${run.id}.html`);
	fs.writeFileSync(file, Buffer.from(await r.arrayBuffer()));
	const fetched = [];
	const onRequest = (q) => { if (!/^(file|data):/.test(q.url())) fetched.push(q.url()); };
	page.on('request', onRequest);
	await page.goto('file://' + file);
	await page.waitForSelector('#percentiles canvas');
	assert.equal(await page.textContent('#state'), 'succeeded');
	assert.equal(await page.textContent('#verdict'), summary.client.verdict);
	for (const [metric, stat] of [['time_to_first_token', 'p50'], ['request_latency', 'p99']]) {
		const v = await page.$eval(`#summary tr[data-metric="${metric}"] td[data-stat="${stat}"]`,
			(td) => td.dataset.value);
		assert.equal(Number(v), summary.metrics[metric][stat], `${metric}.${stat}`);
	}
	// the CDFs, one point per valid profiling record (fewer than 1,000: every value)
	const valid = runs.feature.recs.filter((x) => x.valid && x.phase === 'profiling');
	const cdfs = Object.fromEntries(await page.$$eval('#cdfs .chart', (cs) => cs.map((c) =>
		[c.dataset.chart, [Number(c.dataset.points), c.dataset.exact, c.querySelectorAll('canvas').length]])));
	for (const m of ['time_to_first_token', 'inter_token_latency', 'request_latency'])
		assert.deepEqual(cdfs[`CDF: ${m}`], [valid.filter((x) => typeof x[m] === 'number').length, 'true', 1], m);
	const ts = await json(`/runs/${run.id}/timeseries?buckets=200`); // the report's
	const charts = await page.$$eval('#timeseries .chart', (cs) => cs.map((c) =>
		[Number(c.dataset.points), c.querySelectorAll('canvas').length]));
	assert.equal(charts.length, 6);
	for (const [points, canvases] of charts) assert.deepEqual([points, canvases], [ts.buckets, 1]);
	page.off('request', onRequest);
	assert.deepEqual(fetched, [], 'the report needs nothing but its file');
	await shot('report');
	noProblems();
});

test('unknown run and unknown page: explained, not blank', async () => {
	await page.goto(`${base}/runs/999999`);
	await page.waitForSelector('.state.error');
	assert.match(await page.textContent('.state.error'), /999999|not found|no run/i);
	// a 404 of the API is an expected answer, not a page fault: forget its console line
	problems.splice(0);
	await page.goto(`${base}/nowhere`);
	await page.waitForSelector('.state.error');
	noProblems();
	// assets and the API are not swallowed by the page fallback
	const r = await fetch(`${base}/nope.js`);
	assert.equal(r.status, 404);
});

test('labels: added and removed from the run page, as the API then says', async () => {
	const id = runs.main.run.id;
	await page.goto(`${base}/runs/${id}`);
	await page.waitForSelector('#cdfs canvas');
	await page.fill('#label-new', 'reviewed=yes');
	await page.click('text=Add label');
	await page.waitForSelector('#labels [data-label=reviewed]');
	assert.equal((await json(`/runs/${id}`)).labels.reviewed, 'yes');
	await page.click('button[aria-label="remove label reviewed"]');
	await page.waitForSelector('#labels [data-label=reviewed]', { state: 'detached' });
	assert.equal((await json(`/runs/${id}`)).labels.reviewed, undefined);
	assert.equal((await json(`/runs/${id}`)).labels.branch, 'main');
	// downloads carry the token's way (fetch, then saved): the API's bytes
	for (const [button, path] of [['summary.csv', 'summary?format=csv'], ['vLLM json', 'export?format=vllm']]) {
		const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`#exports button:text-is("${button}")`)]);
		const got = fs.readFileSync(await dl.path(), 'utf8');
		const want = await (await api.call('GET', `/runs/${id}/${path}`)).text;
		assert.equal(got, want, button);
	}
	noProblems();
});

test('submit: a bad spec is answered at its field; a good one is followed live, then cancelled',
	async () => {
		await page.goto(`${base}/submit`);
		const bad = spec(mockA, 'dash-live', { branch: 'live' });
		bad.load = { mode: 'concurrency', concurrency: 0, duration_s: 120 };
		await page.fill('#spec', JSON.stringify(bad, null, 2));
		await page.click('form button[type=submit]');
		await page.waitForSelector('#error-field');
		assert.equal(await page.textContent('#error-field'), 'load.concurrency');
		const selected = await page.$eval('#spec', (t) => t.value.slice(t.selectionStart, t.selectionEnd));
		assert.equal(selected, '"concurrency"', 'the field is selected in the editor');
		await shot('submit-error');
		// a 400 of the API is the expected answer here, not a page fault
		problems.splice(0);
		const good = spec(mockA, 'dash-live', { branch: 'live' });
		good.load = { mode: 'concurrency', concurrency: 1, duration_s: 120 };
		await page.fill('#spec', JSON.stringify(good, null, 2));
		await page.click('form button[type=submit]');
		await page.waitForURL(/\/runs\/\d+$/);
		const id = Number(/\/runs\/(\d+)$/.exec(page.url())[1]);
		await page.evaluate(() => { window.notReloaded = true; });
		// live: the progress grows in place (no reload), the charts follow
		const completed = async () => Number(((await page.textContent('#progress')).match(/([\d,]+) completed/)
			|| [0, '0'])[1].replace(/,/g, ''));
		await page.waitForSelector('#progress'); // the URL changes before the page is drawn
		await page.waitForFunction(() => /[1-9][\d,]* completed/.test(
			document.getElementById('progress')?.textContent), null, { timeout: 60000 });
		const first = await completed();
		await page.waitForFunction((n) => {
			const m = /([\d,]+) completed/.exec(document.getElementById('progress')?.textContent);
			return m && Number(m[1].replace(/,/g, '')) > n;
		}, first, { timeout: 60000 });
		await page.waitForSelector('#timeseries canvas');
		assert.equal(await page.evaluate(() => window.notReloaded), true);
		assert.equal(await page.textContent('#state'), 'running');
		// the numbers come from the server-sent events, not from polling
		assert.equal(await page.$eval('#live', (p) => p.dataset.kind), 'eventsource');
		assert.ok(await page.$eval('#live', (p) => Number(p.dataset.events)) > 0);
		await shot('live');
		await page.click('#cancel');
		// the page turns into the finished run's
		await page.waitForSelector('#state.cancelled', { timeout: 60000 });
		await page.waitForSelector('#exports');
		assert.equal(await page.evaluate(() => window.notReloaded), true);
		assert.equal((await json(`/runs/${id}`)).state, 'cancelled');
		assert.equal((await json(`/runs/${id}`)).labels.branch, 'live');
		noProblems();
	});

test('live: a queued run followed by server-sent events to its own end, then the finished page', async () => {
	// a blocker keeps the run queued until the page follows it
	const blocker = spec(mockA, 'dash-blocker', { branch: 'live' });
	blocker.load = { mode: 'concurrency', concurrency: 1, duration_s: 300 };
	const b = await api.call('POST', '/runs', blocker);
	assert.equal(b.status, 201, b.text);
	const follow = spec(mockA, 'dash-follow', { branch: 'live' });
	follow.load = { mode: 'concurrency', concurrency: 2, requests: 300 };
	const f = await api.call('POST', '/runs', follow);
	assert.equal(f.status, 201, f.text);
	const id = f.json().id;
	const streams = [];
	const onResponse = (r) => { if (r.url().endsWith(`/runs/${id}/live`)) streams.push(r.headers()['content-type']); };
	page.on('response', onResponse);
	await page.goto(`${base}/runs/${id}`);
	await page.evaluate(() => { window.notReloaded = true; });
	await page.waitForFunction(() => Number(document.getElementById('live')?.dataset.events) > 0);
	assert.equal(await page.textContent('#state'), 'queued');
	assert.equal(await page.$eval('#live', (p) => p.dataset.kind), 'eventsource');
	assert.equal((await api.call('POST', `/runs/${b.json().id}/cancel`)).status, 202);
	// running: the progress and the last second change in place
	await page.waitForFunction(() => /[1-9][\d,]* completed/.test(document.getElementById('progress')?.textContent),
		null, { timeout: 120000 });
	const before = await page.$eval('#live', (p) => Number(p.dataset.events));
	await page.waitForFunction(() => document.getElementById('live-second')?.textContent.startsWith('second '),
		null, { timeout: 120000 });
	await page.waitForSelector('#timeseries canvas');
	// its end event: the finished run's page, with no reload
	await page.waitForSelector('#state.succeeded', { timeout: 120000 });
	await page.waitForSelector('#exports');
	await page.waitForSelector('#cdfs canvas');
	page.off('response', onResponse);
	assert.equal(await page.evaluate(() => window.notReloaded), true);
	assert.ok(streams.length >= 1 && streams.every((t) => t.startsWith('text/event-stream')), streams.join());
	assert.ok(before > 0);
	assert.equal((await json(`/runs/${id}`)).state, 'succeeded');
	noProblems();
});

test('a daemon that needs a token: the page says so, then works with one typed in', async () => {
	const dir = fs.mkdtempSync('/tmp/headroom-browser-token-');
	const secret = execFileSync(path.join(bin, 'headroomd'), ['token', 'create', '--name', 'viewer',
		'--role', 'read', '--data', dir], { encoding: 'utf8' }).trim();
	const submitter = execFileSync(path.join(bin, 'headroomd'), ['token', 'create', '--name', 'ci',
		'--role', 'submit', '--data', dir], { encoding: 'utf8' }).trim();
	const d = await start('headroomd', ['--listen', '127.0.0.1:0', '--data', dir]);
	try {
		const p = await browser.newPage();
		const errors = [];
		p.on('pageerror', (e) => errors.push(e.message));
		await p.goto(`http://${d.addr}/`);
		await p.waitForSelector('.state.error');
		assert.match(await p.textContent('.state.error'), /requires an API token/);
		await p.fill('#token', secret);
		await p.press('#token', 'Enter');
		await p.dispatchEvent('#token', 'change');
		await p.waitForSelector('text=No runs yet');
		// kept for this tab only: sessionStorage, never a cookie
		assert.equal(await p.evaluate(() => sessionStorage.getItem('headroom-token')), secret);
		assert.deepEqual(await p.context().cookies(), []);
		// a live run with the token: the same events, read through fetch
		// (an EventSource cannot send the token); a blocker keeps it queued
		const post = async (body) => {
			const r = await fetch(`http://${d.addr}/api/v1/runs`, { method: 'POST', body: JSON.stringify(body),
				headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${submitter}` } });
			assert.equal(r.status, 201);
			return (await r.json()).id;
		};
		const blocker = spec(mockA, 'token-blocker', {});
		blocker.load = { mode: 'concurrency', concurrency: 1, duration_s: 300 };
		const blockerId = await post(blocker);
		const follow = spec(mockA, 'token-follow', {});
		follow.load = { mode: 'concurrency', concurrency: 2, duration_s: 300 };
		const id = await post(follow);
		const cancel = async (rid) => {
			const c = await fetch(`http://${d.addr}/api/v1/runs/${rid}/cancel`, { method: 'POST',
				headers: { Authorization: `Bearer ${submitter}` } });
			assert.equal(c.status, 202);
		};
		await p.goto(`http://${d.addr}/runs/${id}`);
		await p.waitForFunction(() => Number(document.getElementById('live')?.dataset.events) > 0);
		assert.equal(await p.$eval('#live', (x) => x.dataset.kind), 'fetch');
		await cancel(blockerId);
		// running: its progress arrives by the stream (still no fallback to polling)
		await p.waitForFunction(() => /[1-9][\d,]* completed/.test(document.getElementById('progress')?.textContent),
			null, { timeout: 120000 });
		await p.waitForFunction(() => document.getElementById('live-second')?.textContent.startsWith('second '),
			null, { timeout: 120000 });
		assert.equal(await p.$eval('#live', (x) => x.dataset.kind), 'fetch');
		await cancel(id);
		await p.waitForSelector('#state.cancelled', { timeout: 120000 });
		await p.waitForSelector('#exports');
		assert.deepEqual(errors, []);
		await p.close();
	} finally {
		assert.equal(await stop(d), 0);
		fs.rmSync(dir, { recursive: true, force: true });
	}
});

test('media and clocks: a placed image_generation run shows its media counts, clocks and placement', async () => {
	// two pictures a request from the mock, two local workers placed
	const sp = spec(mockA, 'dash-media', { branch: 'media' });
	sp.target.endpoint = 'image_generation';
	sp.target.stream = false;
	sp.target.extra_body = { n: 2, size: '48x32', quality: 'low' };
	sp.load = { mode: 'concurrency', concurrency: 2, requests: 20 };
	delete sp.workers;
	sp.placement = { local: 2 };
	const { run, recs } = await api.runToEnd(sp);
	const summary = await json(`/runs/${run.id}/summary`);
	const valid = recs.filter((r) => r.valid && r.phase === 'profiling');
	const sum = (k) => valid.reduce((a, r) => a + r[k], 0);
	assert.deepEqual(summary.media, { requests: valid.length, images_in: null, audio_in: null,
		media_bytes_in: null, images_out: 2 * valid.length, bytes_out: sum('bytes_out') });
	await page.goto(`${base}/runs/${run.id}`);
	await page.waitForSelector('#cdfs canvas');
	await page.waitForSelector('#all-requests tbody tr');
	// the media rows: the counts the run has (null ones left out), and the pictures per second
	const media = await page.$$eval('#media tbody tr', (trs) => trs.map((tr) =>
		[tr.dataset.media, Number(tr.querySelector('[data-col=total]').dataset.value)]));
	assert.deepEqual(media, [['images_out', summary.media.images_out], ['bytes_out', summary.media.bytes_out],
		['image_throughput', summary.metrics.image_throughput.avg]]);
	assert.match(await page.textContent('#media tr[data-media=images_out] [data-col=per_request]'), /^2$/);
	// the clocks: a row per worker, where it ran and the summary's offset and bound
	const clock = await page.$$eval('#clock tbody tr', (trs) => trs.map((tr) => [Number(tr.dataset.worker),
		tr.querySelector('[data-col=host]').textContent, Number(tr.querySelector('[data-col=offset]').dataset.value),
		Number(tr.querySelector('[data-col=bound]').dataset.value)]));
	assert.deepEqual(clock, summary.clock.workers.map((w) => [w.worker, 'local', w.offset_ns, w.bound_ns]));
	assert.equal(clock.length, 2);
	assert.match(await page.textContent('#placement'), /^Placement: 2 workers, 2 here; on an agent's loss: fail; none lost$/);
	// the requests: a media column, and the counts in a request's detail
	const first = recs[0];
	assert.equal(await page.textContent(`#all-requests tr[data-req="${first.worker}/${first.seq}"] [data-col=media]`),
		`2 images, ${first.bytes_out.toLocaleString('en-US')} B out`);
	await page.click(`#all-requests tr[data-req="${first.worker}/${first.seq}"]`);
	await page.waitForSelector(`#request-detail h3:text("Request ${first.worker}/${first.seq}")`);
	const cards = Object.fromEntries(await page.$$eval('#request-detail .cards div', (ds) => ds.map((d) =>
		[d.querySelector('b').textContent, d.lastChild.textContent])));
	assert.equal(cards['images out'], '2');
	assert.equal(cards['answer bytes out'], first.bytes_out.toLocaleString('en-US'));
	assert.equal(cards['images in'], undefined, 'a count the record lacks is not shown');
	await shot('run-media');
	// a chat run: no media section or column, its one worker's clock, no placement
	await page.goto(`${base}/runs/${runs.main.run.id}`);
	await page.waitForSelector('#cdfs canvas');
	assert.equal(await page.$('#media'), null);
	assert.equal(await page.$('#placement'), null);
	assert.equal(await page.$$eval('#requests thead th', (ths) => ths.filter((t) => t.textContent === 'media').length), 0);
	assert.deepEqual(await page.$$eval('#clock tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.worker))), [0]);
	noProblems();
});
