// report.js - the one-file report of a run (GET /api/v1/runs/{id}/report.html):
// headroomd writes this script into the file beside uPlot, the styles and
// the run's data (window.HEADROOM_REPORT: run with spec and summary, time
// series, the CDFs of TTFT, ITL and latency as GET /runs/{id}/distribution
// gives them), so it opens from disk with no server. A classic script, not a
// module: browsers load no modules from file://.
(function () {
	'use strict';
	const data = window.HEADROOM_REPORT;
	const main = document.getElementById('view');
	const COLORS = ['#3366cc', '#dc3912', '#109618', '#ff9900', '#990099', '#0099c6'];

	function el(tag, attrs, ...kids) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v === null || v === undefined) continue;
			if (k === 'class') e.className = v;
			else if (k === 'dataset') Object.assign(e.dataset, v);
			else e.setAttribute(k, v);
		}
		for (const c of kids.flat()) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
		return e;
	}

	function num(x) {
		if (x === null || x === undefined || Number.isNaN(x)) return '-';
		if (Number.isInteger(x)) return x.toLocaleString('en-US');
		return Math.abs(x) >= 1000 ? x.toLocaleString('en-US', { maximumFractionDigits: 1 })
			: Number(x.toPrecision(4)).toString();
	}

	function cards(pairs) {
		return el('div', { class: 'cards' }, pairs.map(([k, v]) => el('div', {}, el('b', {}, k), String(v))));
	}

	function chart(parent, title, xs, series, unit, xLabel) {
		const box = el('div', { class: 'chart', dataset: { chart: title, points: xs.length } }, el('h3', {}, title));
		parent.append(box);
		new uPlot({
			width: Math.max(300, box.clientWidth - 14), height: 220,
			series: [{ label: xLabel }, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length],
				width: 1.5, spanGaps: !!s.gaps }))],
			axes: [{ label: xLabel }, { label: unit, size: 60 }],
			scales: { x: { time: false } },
			cursor: { sync: { key: 'report' }, drag: { x: true, y: false } },
		}, [xs, ...series.map((s) => s.values)], box);
	}

	const run = data.run, s = run.summary, ts = data.timeseries;
	document.title = `headroom run ${run.id}: ${run.name || ''}`;
	const t = (run.spec && run.spec.target) || {}, l = (run.spec && run.spec.load) || {};
	main.append(el('h1', {}, `Run ${run.id}: ${run.name || '(no name)'} `, el('span', { class: run.state, id: 'state' }, run.state)),
		el('p', { class: 'muted' }, `A headroom report, written ${data.generated_at}.`),
		cards([['submitted', run.created_at], ['finished', run.finished_at || '-'], ['target', t.url || '-'],
			['model', t.model || '-'], ['load', `${l.mode || '?'} ${l.rate || l.concurrency || ''}`],
			['labels', Object.entries(run.labels || {}).map(([k, v]) => `${k}=${v}`).join(' ') || '-']]));
	if (s) {
		const c = s.client, v = s.validity;
		main.append(el('p', {}, 'Client verdict: ', el('b', { class: c ? c.verdict : 'muted', id: 'verdict' }, c ? c.verdict : '-'),
			'  Validity: ', el('b', { class: v && v.valid ? 'valid' : 'invalid', id: 'validity' }, v ? (v.valid ? 'valid' : 'invalid') : '-'),
			v && v.reasons.length ? ' — ' + v.reasons.map((r) => r.message).join('; ') : ''));
		const stats = ['count', 'avg', 'min', 'p50', 'p90', 'p95', 'p99', 'max'];
		main.append(el('h2', {}, 'Summary'), el('table', { id: 'summary' },
			el('thead', {}, el('tr', {}, el('th', {}, 'metric'), el('th', {}, 'unit'), stats.map((k) => el('th', { class: 'num' }, k)))),
			el('tbody', {}, Object.entries(s.metrics).map(([name, m]) => el('tr', { dataset: { metric: name } },
				el('th', {}, name), el('td', { class: 'muted' }, m.unit || ''),
				stats.map((k) => el('td', { class: 'num', dataset: { stat: k, value: m[k] === undefined ? '' : m[k] } }, num(m[k]))))))));
	}
	// the CDFs, as the run's page draws them: every value up to 1,000, else 1,000 quantiles
	const cdfs = el('div', { class: 'charts', id: 'cdfs' });
	const dist = ((data.distribution && data.distribution.metrics) || []).filter((d) => d.values.length);
	main.append(el('h2', {}, 'Distributions'), dist.length ? cdfs
		: el('p', { class: 'state' }, 'No valid requests: no distribution.'));
	for (const d of dist) {
		chart(cdfs, `CDF: ${d.metric}`, d.values, [{ label: 'fraction', values: d.fractions }], 'fraction of requests',
			`${d.metric} (${d.unit})`);
		Object.assign(cdfs.lastChild.dataset, { count: d.count, exact: d.exact });
	}
	const box = el('div', { class: 'charts', id: 'timeseries' });
	main.append(el('h2', {}, `Over time (step ${ts.step_ms} ms)`), box);
	if (!ts.buckets) {
		box.append(el('p', { class: 'state' }, 'No records.'));
		return;
	}
	const xs = ts.t_ms.map((v) => v / 1000), per = ts.step_ms / 1000, m = ts.metrics;
	const rate = (a) => a.map((v) => v / per);
	chart(box, 'Sends per second, intended and actual', xs, [{ label: 'intended', values: rate(ts.intended) },
		{ label: 'sent', values: rate(ts.sent) }, { label: 'completed', values: rate(ts.completed) },
		{ label: 'errors', values: rate(ts.errors) }], 'requests/s', 'time (s)');
	chart(box, 'Requests in flight', xs, [{ label: 'in flight', values: ts.in_flight }], 'requests', 'time (s)');
	chart(box, 'Time to first token', xs, ['p50', 'p90', 'p99'].map((p) => ({ label: p, values: m.time_to_first_token[p] })), 'ms', 'time (s)');
	chart(box, 'Request latency', xs, ['p50', 'p90', 'p99'].map((p) => ({ label: p, values: m.request_latency[p] })), 'ms', 'time (s)');
	chart(box, 'Output tokens per second', xs, [{ label: 'output', values: ts.output_tokens_per_s }], 'tokens/s', 'time (s)');
	chart(box, 'Schedule lag', xs, ['p50', 'p99'].map((p) => ({ label: p, values: m.schedule_lag[p] })), 'ms', 'time (s)');
	if (s) {
		// each distribution's percentiles from the summary, as a curve
		const pcts = [1, 5, 10, 25, 50, 75, 90, 95, 99];
		const dist = el('div', { class: 'charts', id: 'percentiles' });
		main.append(el('h2', {}, 'Percentiles'), dist);
		for (const name of ['time_to_first_token', 'inter_token_latency', 'request_latency']) {
			const mm = s.metrics[name];
			if (!mm || mm.p50 === undefined) continue;
			chart(dist, `${name} percentiles`, pcts.map((p) => mm[`p${p}`]),
				[{ label: 'fraction', values: pcts.map((p) => p / 100) }], 'fraction of requests', mm.unit);
		}
	}
})();
