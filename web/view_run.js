// view_run.js - one run in depth: the spec in words, labels, client verdict
// with its evidence, validity and gates, the summary table, charts of the
// run's time series on one shared time axis (GET /runs/{id}/timeseries),
// CDFs (GET /runs/{id}/distribution), what media requests carried (the
// summary's media), each worker's clock and where it ran (its clock and
// placement), and a drill-down into any request:
// the slowest, the failed, and every one a page at a time (GET
// /runs/{id}/requests); the live view of a running run follows its
// server-sent events (GET /runs/{id}/live). Nothing downloads every record.
import { get, raw, send, distributions, events } from './api.js';
import { el, num, stateBox, time, duration, withUnit } from './fmt.js';
import { timeChart, sampledChart, cdfChart, histChart, resetGroup } from './charts.js';

function specWords(spec) {
	if (!spec) return '-';
	const t = spec.target || {}, l = spec.load || {}, w = spec.workload || {};
	const load = l.mode === 'rate' ? `${l.rate} req/s (${l.arrival || 'constant'} arrivals)`
		: l.mode === 'concurrency' ? `${l.concurrency} concurrent` : (l.mode || '?');
	const len = (x) => x && typeof x === 'object' && 'mean' in x ? `${x.mean} tokens` : '-';
	const size = l.requests ? `${l.requests} requests` : l.duration_s ? `${l.duration_s} s` : '';
	return [
		['target', `${t.url || (t.mock ? 'a headroom-mock' : '-')}`],
		['model', t.model || '-'],
		['endpoint', `${t.endpoint || '-'}${t.stream ? ', streamed' : ''}`],
		['load', `${load}${size ? ', ' + size : ''}`],
		['workload', `input ${len(w.isl)}, output ${len(w.osl)}`],
		['workers', spec.workers ?? '-'],
	];
}

function cards(pairs) {
	return el('div', { class: 'cards' }, pairs.map(([k, v]) => el('div', {}, el('b', {}, k),
		v instanceof Node ? v : String(v))));
}

function summaryTable(s) {
	const stats = ['count', 'avg', 'min', 'p50', 'p90', 'p95', 'p99', 'max'];
	const body = el('tbody');
	for (const [name, m] of Object.entries(s.metrics || {})) {
		body.append(el('tr', { dataset: { metric: name } }, el('th', {}, name),
			el('td', { class: 'muted' }, m.unit || ''),
			stats.map((k) => el('td', { class: 'num', dataset: { stat: k, value: m[k] ?? '' } },
				num(m[k]))),
			el('td', { class: 'num muted' }, m.ci && m.ci.p99 ? `${num(m.ci.p99[0])} – ${num(m.ci.p99[1])}` : '')));
	}
	return el('div', { class: 'scroll' }, el('table', { id: 'summary' }, el('thead', {}, el('tr', {},
		el('th', {}, 'metric'), el('th', {}, 'unit'), stats.map((k) => el('th', { class: 'num' }, k)),
		el('th', { class: 'num' }, 'p99 95% interval'))), body));
}

function evidence(s) {
	const out = el('div');
	const c = s && s.client;
	if (c) {
		out.append(el('p', {}, 'Client verdict: ', el('b', { class: c.verdict, id: 'verdict' }, c.verdict),
			c.reasons && c.reasons.length ? ' — ' + c.reasons.map((r) => r.message || r.code).join('; ') : ''));
		if (c.headline) out.append(cards(Object.entries(c.headline)
			.filter(([, v]) => typeof v === 'number').slice(0, 10).map(([k, v]) => [k, num(v)])));
	}
	const v = s && s.validity;
	if (v) out.append(el('p', {}, 'Validity: ', el('b', { class: v.valid ? 'valid' : 'invalid', id: 'validity' },
		v.valid ? 'valid' : 'invalid'), v.reasons.length ? ' — ' + v.reasons.map((r) => r.message).join('; ') : ''));
	const g = s && s.gates;
	if (g) out.append(el('p', {}, 'Gates: ', el('b', { class: g.passed ? 'passed' : 'failed' },
		g.passed ? 'passed' : 'failed')), el('ul', {}, g.results.map((r) =>
		el('li', { class: r.passed ? 'passed' : 'failed' }, r.message))));
	return out;
}

// The fields of summary.media and of a record that count media
// (docs/metrics.md, "Media"), with their words.
const MEDIA = [['images_in', 'images in'], ['audio_in', 'audio clips in'],
	['media_bytes_in', 'media bytes in (as files)'], ['images_out', 'images out'],
	['bytes_out', 'answer bytes out']];

// What the valid requests carried and got back: each count the run has,
// in all and per request, and the pictures answered per second.
function mediaTable(s) {
	const m = s.media, it = s.metrics && s.metrics.image_throughput;
	const body = el('tbody');
	for (const [k, words] of MEDIA) {
		if (m[k] === null || m[k] === undefined) continue;
		body.append(el('tr', { dataset: { media: k } }, el('th', {}, words),
			el('td', { class: 'num', dataset: { col: 'total', value: m[k] } }, num(m[k])),
			el('td', { class: 'num', dataset: { col: 'per_request' } }, num(m.requests ? m[k] / m.requests : null))));
	}
	if (it) body.append(el('tr', { dataset: { media: 'image_throughput' } }, el('th', {}, 'image throughput'),
		el('td', { class: 'num', dataset: { col: 'total', value: it.avg } }, withUnit(it.avg, it.unit)),
		el('td', {})));
	return el('div', {}, el('p', { class: 'muted' }, `Over the ${num(m.requests)} valid requests that carry media counts.`),
		el('div', { class: 'scroll' }, el('table', { id: 'media' }, el('thead', {}, el('tr', {}, el('th', {}, 'count'),
			el('th', { class: 'num' }, 'total'), el('th', { class: 'num' }, 'per request'))), body)));
}

// Where each worker ran (summary.placement): 'local' or its agent's name.
function hostOf(pl) {
	const where = new Map(), lost = new Set();
	for (const a of (pl && pl.agents) || []) for (const w of a.workers || []) where.set(w, a.name);
	for (const x of (pl && pl.lost) || []) lost.add(x.worker);
	return (w) => `${where.get(w) ?? 'local'}${lost.has(w) ? ' (lost)' : ''}`;
}

function placementText(pl) {
	const parts = [`${pl.local} here`, ...(pl.agents || []).map((a) => `${a.workers.length} on ${a.name}`)];
	const lost = (pl.lost || []).map((x) => `worker ${x.worker} on ${x.agent} at ${num(x.at_s)} s (${x.reason})`);
	return `Placement: ${pl.workers} workers, ${parts.join(', ')}; on an agent's loss: ${pl.on_agent_loss}` +
		(lost.length ? `; lost: ${lost.join('; ')}` : '; none lost');
}

// Each worker's clock against the daemon's (docs/client.md, "One clock"):
// where it ran, its offset, the bound on it, the exchange's delay, bursts
// and drift; the placement above it for a placed run.
function clockTable(s) {
	const c = s.clock, pl = s.placement, host = hostOf(pl);
	const ms = (ns) => (typeof ns === 'number' ? num(ns / 1e6) : '-');
	const body = el('tbody');
	for (const w of c.workers || []) {
		const cells = w.measured ? [
			el('td', { class: 'num', dataset: { col: 'offset', value: w.offset_ns } }, ms(w.offset_ns)),
			el('td', { class: 'num', dataset: { col: 'bound', value: w.bound_ns } }, ms(w.bound_ns)),
			el('td', { class: 'num', dataset: { col: 'delay', value: w.delay_ns } }, ms(w.delay_ns)),
			el('td', { class: 'num' }, num(w.bursts)), el('td', { class: 'num' }, num(w.drift_ppm))]
			: [el('td', { class: 'muted', colspan: 5 }, 'not measured (its offset taken as 0)')];
		body.append(el('tr', { dataset: { worker: w.worker } }, el('td', { class: 'num' }, w.worker),
			el('td', { dataset: { col: 'host' } }, host(w.worker)), cells));
	}
	const bound = c.max_bound_ns === null ? 'none measured' : `largest bound ±${ms(c.max_bound_ns)} ms`;
	return el('div', {},
		pl ? el('p', { id: 'placement' }, placementText(pl)) : null,
		el('p', { class: 'muted' }, `${num(c.measured)} of ${num((c.workers || []).length)} workers measured (${c.method}), ${bound}; ` +
			'the true offset (worker clock − daemon clock) lies within offset ± bound.'),
		el('div', { class: 'scroll' }, el('table', { id: 'clock' }, el('thead', {}, el('tr', {},
			el('th', { class: 'num' }, 'worker'), el('th', {}, 'ran on'), el('th', { class: 'num' }, 'offset (ms)'),
			el('th', { class: 'num' }, '± bound (ms)'), el('th', { class: 'num' }, 'delay (ms)'),
			el('th', { class: 'num' }, 'bursts'), el('th', { class: 'num' }, 'drift (ppm)'))), body)));
}

function charts(ts) {
	const box = el('div', { class: 'charts', id: 'timeseries', dataset: { step: ts.step_ms } });
	if (!ts.buckets) {
		box.append(stateBox('No records yet: nothing to chart.'));
		return box;
	}
	const xs = ts.t_ms.map((t) => t / 1000);
	const per = ts.step_ms / 1000;
	const rate = (a) => a.map((v) => v / per);
	const warmup = ts.warmup_ms ? ts.warmup_ms.map((t) => t / 1000) : null;
	const o = { sync: 'run', warmup };
	const u = ` (step ${ts.step_ms} ms)`;
	const m = ts.metrics;
	const mk = (parent) => {
		timeChart(parent, 'Sends per second, intended and actual' + u, xs, [
			{ label: 'intended', values: rate(ts.intended), unit: 'req/s' },
			{ label: 'sent', values: rate(ts.sent), unit: 'req/s' },
			{ label: 'completed', values: rate(ts.completed), unit: 'req/s' },
			{ label: 'errors', values: rate(ts.errors), unit: 'req/s' }], { ...o, yLabel: 'requests/s' });
		timeChart(parent, 'Requests in flight', xs, [{ label: 'in flight', values: ts.in_flight, unit: '' }],
			{ ...o, yLabel: 'requests' });
		timeChart(parent, 'Time to first token (by send time)', xs, ['p50', 'p90', 'p99'].map((p) =>
			({ label: p, values: m.time_to_first_token[p], unit: 'ms', gaps: true })), { ...o, yLabel: 'ms' });
		timeChart(parent, 'Request latency and inter-token latency', xs, [
			{ label: 'latency p50', values: m.request_latency.p50, unit: 'ms', gaps: true },
			{ label: 'latency p99', values: m.request_latency.p99, unit: 'ms', gaps: true },
			{ label: 'ITL p50', values: m.inter_token_latency.p50, unit: 'ms', gaps: true },
			{ label: 'ITL p99', values: m.inter_token_latency.p99, unit: 'ms', gaps: true }], { ...o, yLabel: 'ms' });
		timeChart(parent, 'Output tokens per second', xs, [{ label: 'output', values: ts.output_tokens_per_s,
			unit: 'tokens/s' }], { ...o, yLabel: 'tokens/s' });
		timeChart(parent, 'Schedule lag (send − intended send)', xs, ['p50', 'p99'].map((p) =>
			({ label: p, values: m.schedule_lag[p], unit: 'ms', gaps: true })), { ...o, yLabel: 'ms' });
		const kinds = Object.entries(ts.error_kinds);
		if (kinds.length) timeChart(parent, 'Errors by kind', xs, kinds.map(([k, v]) =>
			({ label: k, values: v, unit: 'per step' })), { ...o, yLabel: 'errors per step' });
	};
	box.mk = mk;
	return box;
}

const GPU_CHARTS = [['gpu.power_w', 'GPU power', 'W', 1], ['gpu.util_pct', 'GPU utilisation', '%', 1],
	['gpu.mem_used_bytes', 'GPU memory used', 'GiB', 1 / 2 ** 30], ['gpu.temp_c', 'GPU temperature', '°C', 1]];
const SERVER_CHARTS = [[['server.requests_running', 'server.requests_waiting'], 'Server: requests running and waiting', 'requests', 1],
	[['server.kv_cache_usage'], 'Server: KV-cache use', 'fraction', 1]];

// Telemetry samples (t_s on the records' clock) as charts: one series per
// source, GPU and labels.
function telemetryCharts(parent, tele, o) {
	const by = new Map();
	for (const x of tele.samples) {
		if (x.t_s === null || x.value === null) continue;
		if (!by.has(x.name)) by.set(x.name, new Map());
		const key = [x.source, x.gpu ? x.gpu.slice(0, 12) : '', x.labels].filter(Boolean).join(' ');
		const m = by.get(x.name);
		if (!m.has(key)) m.set(key, { xs: [], ys: [] });
		m.get(key).xs.push(x.t_s);
		m.get(key).ys.push(x.value);
	}
	let n = 0;
	const chart = (names, title, unit, scale) => {
		const series = [];
		for (const name of names)
			for (const [key, v] of by.get(name) || [])
				series.push({ label: `${names.length > 1 ? name.replace('server.', '') + ' ' : ''}${key}`, xs: v.xs,
					ys: v.ys.map((y) => y * scale), unit });
		if (!series.length) return;
		sampledChart(parent, title, series, { ...o, yLabel: unit });
		n++;
	};
	for (const [name, title, unit, scale] of GPU_CHARTS) chart([name], title, unit, scale);
	for (const [names, title, unit, scale] of SERVER_CHARTS) chart(names, title, unit, scale);
	return n;
}

// The load generator's own samples: per worker (and the daemon) CPU, loop
// busy and timer lateness.
function clientCharts(parent, cl, o) {
	const by = new Map();
	for (const x of cl.samples) {
		if (!by.has(x.source)) by.set(x.source, []);
		by.get(x.source).push(x);
	}
	const chart = (field, title, unit, workersOnly) => {
		const series = [];
		for (const [src, xs] of by) {
			if (workersOnly && src === 'daemon') continue;
			const pts = xs.filter((x) => x[field] !== null && x[field] !== undefined);
			if (pts.length) series.push({ label: src, xs: pts.map((x) => x.t_s), ys: pts.map((x) => x[field]), unit });
		}
		if (series.length) sampledChart(parent, title, series, { ...o, yLabel: unit });
	};
	chart('cpu', 'Load generator: CPU (1 = one core)', 'cores', false);
	chart('loop_busy', 'Workers: event loop busy', 'fraction', true);
	chart('late_max_ms', 'Workers: largest timer lateness', 'ms', true);
}

async function cdfs(parent, id) {
	const d = await distributions(id, ['time_to_first_token', 'scheduled_time_to_first_token',
		'inter_token_latency', 'request_latency', 'scheduled_request_latency']);
	const set = (m, label) => ({ label, values: d[m].values, fractions: d[m].fractions, exact: d[m].exact });
	return () => {
		cdfChart(parent, 'CDF: time to first token, plain and scheduled', [set('time_to_first_token', 'TTFT'),
			set('scheduled_time_to_first_token', 'scheduled TTFT')], 'ms');
		cdfChart(parent, 'CDF: inter-token latency (per request)', [set('inter_token_latency', 'ITL')], 'ms');
		cdfChart(parent, 'CDF: request latency, plain and scheduled', [set('request_latency', 'latency'),
			set('scheduled_request_latency', 'scheduled latency')], 'ms');
		histChart(parent, 'Histogram: time to first token', set('time_to_first_token', 'TTFT'), 'ms');
		histChart(parent, 'Histogram: inter-token latency (per request)', set('inter_token_latency', 'ITL'), 'ms');
		histChart(parent, 'Histogram: request latency', set('request_latency', 'latency'), 'ms');
	};
}

const ms = (ns) => (ns === null || ns === undefined ? null : ns / 1e6);

// One request: its fields and every chunk on a timeline from intended send to end.
export function requestDetail(r) {
	const t0 = r.intended_ns ?? r.start_ns;
	const tEnd = r.done_ns ?? r.end_ns ?? r.start_ns;
	const span = Math.max(1, tEnd - t0);
	const pos = (ns) => `${Math.min(100, Math.max(0, ((ns - t0) / span) * 100)).toFixed(2)}%`;
	const line = el('div', { class: 'timeline', 'aria-label': 'request timeline' });
	const chunks = (r.chunk_offsets_ns || []).map((o) => r.start_ns + o);
	for (const c of chunks) line.append(el('i', { style: `left:${pos(c)}`, title: `chunk at ${num(ms(c - t0))} ms` }));
	const marks = [['intended', r.intended_ns], ['sent', r.start_ns], ['headers', r.headers_ns],
		['first output', r.first_output_ns], ['end', r.end_ns]];
	let lane = 0;
	for (const [name, t] of marks) {
		if (t === null || t === undefined) continue;
		line.append(el('i', { class: 'mark' + (name === 'end' && !r.valid ? ' err' : ''), style: `left:${pos(t)}` },
			el('span', { style: `top:${(lane++ % 3) * 12 - 2}px` }, `${name} ${num(ms(t - t0))} ms`)));
	}
	const f = [['worker / seq', `${r.worker} / ${r.seq}`], ['request', r.req_id], ['phase', r.phase],
		['status', r.status], ['error', r.error || 'none'], ['valid', r.valid ? 'yes' : 'no'],
		['TTFT', withUnit(r.time_to_first_token, 'ms')], ['latency', withUnit(r.request_latency, 'ms')],
		['ITL', withUnit(r.inter_token_latency, 'ms')], ['schedule lag', withUnit(r.schedule_lag, 'ms')],
		['input', withUnit(r.isl, 'tokens')], ['output', withUnit(r.osl, 'tokens')],
		['chunks', r.n_chunks], ...MEDIA.filter(([k]) => r[k] !== null && r[k] !== undefined)
			.map(([k, words]) => [words, num(r[k])])];
	return el('div', { class: 'detail', id: 'request-detail', tabindex: '-1' },
		el('h3', {}, `Request ${r.worker}/${r.seq}`), cards(f),
		r.error_message ? el('p', { class: 'error' }, 'Error: ', r.error_message) : null,
		el('p', { class: 'muted' }, `Timeline from the intended send (0 ms) to the end; ${chunks.length} chunk arrivals as ticks.`),
		line);
}

// A record's media counts in short ('2 images, 1 clip, 41,230 B in; 1 image, 2,088 B out'), '' for none.
function mediaText(r) {
	const has = (k) => r[k] !== null && r[k] !== undefined;
	const part = (pairs) => pairs.filter(([k]) => has(k)).map(([k, one, many]) =>
		`${num(r[k])}${one === 'B' ? ' B' : ` ${r[k] === 1 ? one : many}`}`).join(', ');
	const i = part([['images_in', 'image', 'images'], ['audio_in', 'clip', 'clips'], ['media_bytes_in', 'B']]);
	const o = part([['images_out', 'image', 'images'], ['bytes_out', 'B']]);
	return [i && `${i} in`, o && `${o} out`].filter(Boolean).join('; ');
}

const REQ_HEAD = (media) => el('thead', {}, el('tr', {},
	el('th', { class: 'num' }, 'worker/seq'), el('th', {}, 'phase'), el('th', { class: 'num' }, 'status'),
	el('th', {}, 'error'), el('th', { class: 'num' }, 'TTFT (ms)'), el('th', { class: 'num' }, 'latency (ms)'),
	el('th', { class: 'num' }, 'output (tokens)'), el('th', { class: 'num' }, 'chunks'),
	media ? el('th', {}, 'media') : null));

// Rows of requests in body (with a media column when media); selecting
// one (click, Enter) shows it in detail.
function requestRows(body, list, detail, media) {
	for (const r of list) {
		const tr = el('tr', { class: 'click', tabindex: '0', dataset: { req: `${r.worker}/${r.seq}` } },
			el('td', { class: 'num' }, `${r.worker}/${r.seq}`), el('td', {}, r.phase),
			el('td', { class: 'num' }, r.status), el('td', { class: r.valid ? '' : 'failed' }, r.error || ''),
			el('td', { class: 'num' }, num(r.time_to_first_token)), el('td', { class: 'num' }, num(r.request_latency)),
			el('td', { class: 'num' }, num(r.osl)), el('td', { class: 'num' }, num(r.n_chunks)),
			media ? el('td', { dataset: { col: 'media' } }, mediaText(r)) : null);
		const open = () => {
			document.querySelectorAll('tr.sel').forEach((x) => x.classList.remove('sel'));
			tr.classList.add('sel');
			detail.replaceChildren(requestDetail(r));
		};
		tr.addEventListener('click', open);
		tr.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); } });
		body.append(tr);
	}
}

function requestTable(parent, slow, bad, detail, media) {
	const body = el('tbody');
	requestRows(body, [...slow, ...bad], detail, media);
	parent.append(el('p', { class: 'muted' }, 'The slowest valid requests and the first failed ones; pick one (click or Enter) to see its record.'),
		el('div', { class: 'scroll' }, el('table', { id: 'requests' }, REQ_HEAD(media), body)));
}

// Every request of the run, PAGE at a time in (worker, seq) order
// (GET /runs/{id}/requests?order=seq&from=W/S): any one can be opened.
const PAGE = 25;
function allRequests(parent, id, detail, media) {
	const body = el('tbody');
	const where = el('span', { class: 'muted', id: 'all-requests-page' });
	const prev = el('button', { type: 'button', id: 'requests-prev' }, '‹ Previous');
	const next = el('button', { type: 'button', id: 'requests-next' }, 'Next ›');
	const msg = el('span', { class: 'error', role: 'alert' });
	const table = el('table', { id: 'all-requests' }, REQ_HEAD(media), body);
	const starts = []; // the from= of each page shown before this one
	let from = '0/0', nextFrom = null, index = 0;
	const load = async () => {
		msg.textContent = '';
		try {
			const d = await get(`/runs/${id}/requests?order=seq&limit=${PAGE}&from=${from}`);
			body.replaceChildren();
			requestRows(body, d.requests, detail, media);
			nextFrom = d.next;
			table.dataset.from = from;
			where.textContent = d.requests.length ? `requests ${num(index * PAGE + 1)}–${num(index * PAGE + d.requests.length)} of ${num(d.total)}` : 'no requests';
			prev.disabled = !starts.length;
			next.disabled = !nextFrom;
		} catch (e) { msg.textContent = e.message; }
	};
	prev.addEventListener('click', () => { from = starts.pop(); index--; load(); });
	next.addEventListener('click', () => { if (!nextFrom) return; starts.push(from); from = nextFrom; index++; load(); });
	parent.append(el('h3', {}, 'All requests'), el('div', { class: 'actions' }, prev, next, where, msg),
		el('div', { class: 'scroll' }, table));
	return load();
}

function labelEditor(run) {
	const box = el('div', { class: 'labels', id: 'labels' });
	const msg = el('span', { class: 'error', role: 'alert' });
	const patch = async (labels) => {
		msg.textContent = '';
		try {
			const r = await send('PATCH', `/runs/${run.id}`, { labels });
			run.labels = r.labels;
			draw();
		} catch (e) {
			msg.textContent = `${e.field ? e.field + ': ' : ''}${e.message}`;
		}
	};
	const input = el('input', { id: 'label-new', size: 20, placeholder: 'key=value', 'aria-label': 'new label key=value' });
	const add = el('button', { type: 'submit' }, 'Add label');
	const form = el('form', { class: 'actions' }, input, add, msg);
	form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		const m = /^([^=]+)=(.*)$/.exec(input.value.trim());
		if (!m) { msg.textContent = 'write key=value'; return; }
		input.value = '';
		patch({ [m[1]]: m[2] });
	});
	function draw() {
		box.replaceChildren(...Object.entries(run.labels || {}).map(([k, v]) => el('span', { dataset: { label: k } }, `${k}=${v}`,
			el('button', { type: 'button', title: `remove label ${k}`, 'aria-label': `remove label ${k}`,
				onclick: () => patch({ [k]: null }) }, '×'))));
	}
	draw();
	return el('div', {}, box, form);
}

// Downloads an export with the token (a plain link would not carry it).
async function download(path, name) {
	const blob = await (await raw(path)).blob();
	const a = el('a', { href: URL.createObjectURL(blob), download: name });
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

function exportsBar(run) {
	const items = [['summary.json', 'summary?format=json'], ['summary.csv', 'summary?format=csv'],
		['records.jsonl', 'records?format=jsonl'], ['records.csv', 'records?format=csv'],
		['telemetry.json', 'telemetry?format=json'], ['telemetry.csv', 'telemetry?format=csv'],
		['client.json', 'client?format=json'], ['client.csv', 'client?format=csv'], ['report.html', 'report.html'],
		['AIPerf json', 'export?format=aiperf-json'], ['AIPerf csv', 'export?format=aiperf-csv'],
		['AIPerf jsonl', 'export?format=aiperf-jsonl'], ['vLLM json', 'export?format=vllm']];
	const msg = el('span', { class: 'error', role: 'alert' });
	return el('div', { class: 'actions', id: 'exports' }, el('span', { class: 'muted' }, 'Download:'),
		items.map(([name, q]) => el('button', { type: 'button', onclick: () => download(`/runs/${run.id}/${q}`,
			`run-${run.id}-${name.toLowerCase().replace(' ', '.')}`).catch((e) => { msg.textContent = e.message; }) },
		name)), msg);
}

function progressText(run) {
	const p = run.progress;
	return p ? `${p.phase}: ${num(p.sent)} sent, ${num(p.completed)} completed, ${num(p.errors)} errors, ${num(p.in_flight)} in flight`
		: 'waiting to start';
}

// The live charts of a running run: one point per second of its clock, from
// the stream's 'second' events (a second sent again replaces the first).
function liveCharts(box, secs) {
	const ts = [...secs.keys()].sort((a, b) => a - b);
	const v = (f) => ts.map((t) => f(secs.get(t)) ?? null);
	const pct = (m, p) => v((x) => x[m] && x[m][p]);
	box.replaceChildren();
	box.dataset.points = ts.length;
	if (!ts.length) {
		box.append(stateBox('Waiting for the first second of records.'));
		return;
	}
	resetGroup('run');
	const o = { sync: 'run' };
	timeChart(box, 'Sends per second, intended and actual', ts, [
		{ label: 'intended', values: v((x) => x.intended), unit: 'req/s' },
		{ label: 'sent', values: v((x) => x.sent), unit: 'req/s' },
		{ label: 'completed', values: v((x) => x.completed), unit: 'req/s' },
		{ label: 'errors', values: v((x) => x.errors), unit: 'req/s' }], { ...o, yLabel: 'requests/s' });
	timeChart(box, 'Requests in flight', ts, [{ label: 'in flight', values: v((x) => x.in_flight), unit: '', gaps: true }],
		{ ...o, yLabel: 'requests' });
	timeChart(box, 'Time to first token (by end second)', ts, ['p50', 'p99'].map((p) =>
		({ label: p, values: pct('time_to_first_token', p), unit: 'ms', gaps: true })), { ...o, yLabel: 'ms' });
	timeChart(box, 'Request latency and inter-token latency', ts, [
		{ label: 'latency p50', values: pct('request_latency', 'p50'), unit: 'ms', gaps: true },
		{ label: 'latency p99', values: pct('request_latency', 'p99'), unit: 'ms', gaps: true },
		{ label: 'ITL p50', values: pct('inter_token_latency', 'p50'), unit: 'ms', gaps: true }], { ...o, yLabel: 'ms' });
	timeChart(box, 'Output tokens per second', ts, [{ label: 'output', values: v((x) => x.output_tokens_per_s),
		unit: 'tokens/s' }], { ...o, yLabel: 'tokens/s' });
}

function lastSecondText(x) {
	if (!x) return '';
	const ms = (m) => (x[m] ? `${num(x[m].p50)} ms` : '-');
	return `second ${x.t_s}: ${num(x.sent)} sent (${num(x.intended)} intended), ${num(x.completed)} completed, ` +
		`${num(x.errors)} errors, TTFT p50 ${ms('time_to_first_token')}, latency p50 ${ms('request_latency')}, ` +
		`${num(x.output_tokens_per_s)} output tokens/s`;
}

// A queued or running run: its progress, the last second's figures and
// per-second charts follow the server-sent events of GET /runs/{id}/live
// in place; its end event turns the page into the finished run's. When the
// stream is refused or fails, the page polls every 2 s instead.
async function liveView(out, run, show) {
	const id = run.id;
	const progress = el('p', { id: 'progress', role: 'status' }, progressText(run));
	const last = el('p', { id: 'live-second', class: 'muted' });
	const cancel = el('button', { type: 'button', id: 'cancel' }, 'Cancel run');
	const msg = el('span', { class: 'error', role: 'alert' });
	cancel.addEventListener('click', async () => {
		cancel.disabled = true;
		try { await send('POST', `/runs/${id}/cancel`); } catch (e) { msg.textContent = e.message; cancel.disabled = false; }
	});
	const box = el('div', { class: 'charts', id: 'timeseries' });
	const status = el('p', { id: 'live', class: 'muted', dataset: { events: 0, kind: '' } });
	out.append(el('div', { class: 'actions' }, cancel, msg), progress, last,
		el('h2', {}, 'Over time (live, per second)'), status, box);
	show();
	const here = location.pathname;
	const finished = () => {
		if (location.pathname === here) window.dispatchEvent(new PopStateEvent('popstate'));
	};
	const secs = new Map();
	let pending = null;
	const redraw = () => {
		pending = null;
		if (location.pathname === here) liveCharts(box, secs);
	};
	await new Promise((resolve) => {
		const stream = events(`/runs/${id}/live`, (type, d) => {
			if (location.pathname !== here) { stream.close(); resolve(); return; }
			status.dataset.events = Number(status.dataset.events) + 1;
			if (type === 'progress') {
				progress.textContent = progressText({ progress: d });
				const st = document.getElementById('state');
				// progress comes only once the runner has taken the run
				if (st.textContent === 'queued') { st.textContent = 'running'; st.className = 'running'; }
			} else if (type === 'second') {
				secs.set(d.t_s, d);
				last.textContent = lastSecondText(secs.get(Math.max(...secs.keys())));
				if (!pending) pending = setTimeout(redraw, 300);
			} else if (type === 'end') {
				// the daemon closes the stream now; events() then closes its side
				status.textContent = `The run ended (${d.state}).`;
				resolve();
				finished();
			}
		}, (e) => {
			status.dataset.kind = 'polling';
			status.textContent = `Live stream unavailable (${e.message}): refreshing every 2 s.`;
			poll(id, here, progress, box).then(resolve, resolve);
		});
		status.dataset.kind = stream.kind;
		status.textContent = 'Following the run live (server-sent events).';
	});
}

// The fallback: GET /runs/{id} and its time series every 2 s until it ends.
async function poll(id, here, progress, box) {
	for (;;) {
		resetGroup('run');
		const ts = await get(`/runs/${id}/timeseries?buckets=200`).catch(() => null);
		if (location.pathname !== here) return;
		const next = charts(ts || { buckets: 0 });
		box.replaceChildren(...next.childNodes);
		box.dataset.step = next.dataset.step || '';
		if (next.mk) next.mk(box);
		await new Promise((r) => setTimeout(r, 2000));
		if (location.pathname !== here) return;
		const now = await get(`/runs/${id}`).catch(() => null);
		if (location.pathname !== here) return;
		if (now) {
			progress.textContent = progressText(now);
			document.getElementById('state').textContent = now.state;
			document.getElementById('state').className = now.state;
			if (now.state !== 'queued' && now.state !== 'running') {
				window.dispatchEvent(new PopStateEvent('popstate'));
				return;
			}
		}
	}
}

export async function runView(out, id, show) {
	const run = await get(`/runs/${id}`);
	const s = run.summary;
	out.append(el('h1', {}, `Run ${run.id}: ${run.name || '(no name)'} `, el('span', { class: run.state, id: 'state' }, run.state)),
		cards([['submitted', time(run.created_at)], ['took', duration(run.started_at, run.finished_at)],
			['fingerprint', run.fingerprint || '-'], ['reason', run.reason || '-']]),
		labelEditor(run), el('h2', {}, 'Spec'), cards(specWords(run.spec)));
	if (run.state === 'queued' || run.state === 'running') {
		liveView(out, run, show).catch((e) => out.append(stateBox(e.message, 'error')));
		return;
	}
	out.append(exportsBar(run));
	const cdfBox = el('div', { class: 'charts', id: 'cdfs' });
	if (s) {
		out.append(el('h2', {}, 'Verdict, validity and gates'), evidence(s), el('h2', {}, 'Summary'), summaryTable(s));
		if (s.media) out.append(el('h2', {}, 'Media'), mediaTable(s));
		if (s.clock) out.append(el('h2', {}, s.placement ? 'Workers: placement and clocks' : "Workers' clocks"), clockTable(s));
	} else out.append(stateBox('This run has no summary.'));
	// a media column in the request tables: the summary says the run has media
	const media = Boolean(s && s.media);
	const none = { samples: [] };
	const [ts, slow, bad, tele, cl, drawCdfs] = await Promise.all([get(`/runs/${id}/timeseries?buckets=200`),
		get(`/runs/${id}/requests?order=slowest&limit=15`), get(`/runs/${id}/requests?order=failed&limit=15`),
		get(`/runs/${id}/telemetry`).catch(() => none), get(`/runs/${id}/client`).catch(() => none),
		cdfs(cdfBox, id)]);
	out.append(el('h2', {}, 'Over time'), el('p', { class: 'muted' },
		'Drag across a chart to zoom (double-click to reset); the cursor and the zoom are shared by every chart. The warm-up is shaded.'));
	const box = charts(ts);
	out.append(box);
	const teleBox = el('div', { class: 'charts', id: 'telemetry' });
	const clientBox = el('div', { class: 'charts', id: 'client' });
	out.append(el('h2', {}, 'GPU and server telemetry'), teleBox,
		el('h2', {}, 'The load generator itself'), clientBox);
	out.append(el('h2', {}, 'Distributions'), cdfBox);
	out.append(el('h2', {}, 'Requests'));
	const reqBox = el('div');
	const detail = el('div');
	out.append(reqBox);
	requestTable(reqBox, slow.requests, bad.requests, detail, media);
	const allBox = el('div');
	out.append(allBox, detail);
	const allLoaded = allRequests(allBox, id, detail, media);
	// charts measure their container: draw them once the page is in the document
	show();
	resetGroup('run');
	const o = { sync: 'run', warmup: ts.warmup_ms ? ts.warmup_ms.map((t) => t / 1000) : null };
	if (box.mk) box.mk(box);
	if (!telemetryCharts(teleBox, tele, o))
		teleBox.append(stateBox('No GPU or server telemetry was collected for this run (spec `telemetry`: NVML, DCGM and /metrics pages).'));
	clientCharts(clientBox, cl, o);
	if (!clientBox.children.length) clientBox.append(stateBox('No load generator samples for this run.'));
	drawCdfs();
	await allLoaded;
}
