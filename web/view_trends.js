// view_trends.js - figures across runs: /trends follows one figure over the
// succeeded runs a label filter selects (GET /series: each run, or each
// value of a label, with its interval and the shifts the daemon marks), and
// /pareto?runs=A,B,... places chosen runs by output tokens per second
// against tokens per second per user, the Pareto front drawn through the
// runs no other beats on both.
import { get } from './api.js';
import { el, num, stateBox, time } from './fmt.js';
import { go } from './app.js';
import { labelParams } from './view_runs.js';
import { COLORS } from './charts.js';

const METRICS = ['time_to_first_token', 'inter_token_latency', 'request_latency',
	'output_token_throughput_per_user', 'schedule_lag', 'request_throughput',
	'output_token_throughput', 'total_token_throughput', 'goodput', 'error_rate'];
const RUN_LEVEL = new Set(['request_throughput', 'output_token_throughput', 'total_token_throughput',
	'goodput', 'image_throughput', 'error_rate']);

function scatter(parent, title, xs, series, xLabel, yLabel) {
	const box = el('div', { class: 'chart', dataset: { chart: title, points: xs.length } }, el('h3', {}, title));
	parent.append(box);
	new uPlot({
		width: Math.max(300, box.clientWidth - 14), height: 300,
		series: [{ label: xLabel }, ...series.map((s, i) => ({
			label: s.label, stroke: s.color || COLORS[i % COLORS.length], width: s.line ? 1.5 : 0,
			spanGaps: true, paths: s.line ? undefined : () => null,
			points: { show: true, size: s.size || 7, fill: s.color || COLORS[i % COLORS.length] },
		}))],
		axes: [{ label: xLabel }, { label: yLabel, size: 60 }],
		scales: { x: { time: false } },
	}, [xs, ...series.map((s) => s.values)], box);
	return box;
}

export async function trendsView(out, url, show) {
	const f = url.searchParams;
	const metric = el('select', { name: 'metric' }, METRICS.map((m) =>
		el('option', { value: m, selected: (f.get('metric') || 'time_to_first_token') === m }, m)));
	const stat = el('select', { name: 'stat' }, ['avg', 'p50', 'p90', 'p99', 'value'].map((s) =>
		el('option', { value: s, selected: (f.get('stat') || 'p99') === s }, s)));
	const labels = el('input', { name: 'labels', size: 26, value: f.get('labels') || '', placeholder: 'model=llama3 branch=main' });
	const group = el('input', { name: 'group_by', size: 12, value: f.get('group_by') || '', placeholder: 'git_sha' });
	const form = el('form', { class: 'filters' }, el('label', {}, 'metric', metric), el('label', {}, 'statistic', stat),
		el('label', {}, 'labels', labels), el('label', {}, 'one point per value of label', group),
		el('button', { type: 'submit' }, 'Show'));
	form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		const q = new URLSearchParams({ metric: metric.value, stat: RUN_LEVEL.has(metric.value) ? 'value' : stat.value });
		if (labels.value) q.set('labels', labels.value);
		if (group.value) q.set('group_by', group.value);
		go('/trends?' + q);
	});
	out.append(el('h1', {}, 'Trends'), form);
	if (!f.get('metric')) {
		out.append(stateBox('Pick a figure and the runs (by label) to follow it over.'));
		return;
	}
	const q = [['metric', f.get('metric')], ['stat', f.get('stat') || 'p99'], ...labelParams(f.get('labels'))];
	if (f.get('group_by')) q.push(['group_by', 'label.' + f.get('group_by')]);
	const s = await get('/series?' + q.map(([k, v]) => encodeURIComponent(k) + (v === null ? '' : '=' + encodeURIComponent(v))).join('&'));
	if (!s.points.length) {
		out.append(stateBox('No succeeded run has this figure under these filters.'));
		return;
	}
	const xs = s.points.map((p, i) => i + 1);
	const pick = (fn) => s.points.map(fn);
	const box = el('div', { class: 'charts', id: 'trend' });
	out.append(el('p', { class: 'muted' }, `${s.metric}.${s.stat} (${s.unit}; ${s.direction} is better) over ${s.points.length} points, oldest first; a shift is a point that moved by the lookback rule (${s.rule.lookback} points, z ${s.rule.z}, noise ${s.rule.noise_pct}%).`), box);
	const body = el('tbody', {}, s.points.map((p, i) => el('tr', { dataset: { key: p.key } },
		el('td', { class: 'num' }, i + 1), el('td', {}, p.runs.length === 1 ? el('a', { href: `/runs/${p.runs[0]}` }, p.key) : p.key),
		el('td', { class: 'time' }, time(p.time)), el('td', { class: 'num', dataset: { value: p.value } }, num(p.value)),
		el('td', { class: 'num muted' }, p.ci ? `${num(p.ci[0])} – ${num(p.ci[1])}` : '-'),
		el('td', { class: p.shift || 'muted' }, p.shift || '-'))));
	out.append(el('table', { id: 'trend-points' }, el('thead', {}, el('tr', {}, el('th', { class: 'num' }, '#'),
		el('th', {}, s.group_by ? s.group_by : 'run'), el('th', {}, 'time'), el('th', { class: 'num' }, `${s.stat} (${s.unit})`),
		el('th', { class: 'num' }, 'interval'), el('th', {}, 'shift'))), body));
	show();
	scatter(box, `${s.metric}.${s.stat}`, xs, [
		{ label: 'value', values: pick((p) => p.value), line: true },
		{ label: 'interval low', values: pick((p) => (p.ci ? p.ci[0] : null)), color: '#999', size: 3 },
		{ label: 'interval high', values: pick((p) => (p.ci ? p.ci[1] : null)), color: '#999', size: 3 },
		{ label: 'shift: worse', values: pick((p) => (p.shift === 'worse' ? p.value : null)), color: '#b3261e', size: 12 },
		{ label: 'shift: better', values: pick((p) => (p.shift === 'better' ? p.value : null)), color: '#176b2c', size: 12 },
	], 'point (oldest first)', s.unit);
}

// The runs no other run beats on both figures (higher is better for both).
export function paretoFront(pts) {
	return pts.filter((p) => !pts.some((q) => q !== p && q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y)));
}

export async function paretoView(out, url, show) {
	const ids = (url.searchParams.get('runs') || '').split(',').filter((x) => /^\d+$/.test(x));
	out.append(el('h1', {}, 'Throughput against speed per user'));
	if (ids.length < 2) {
		out.append(stateBox('Pick two or more runs in the runs list, then "Throughput vs speed".'));
		return;
	}
	const sums = await Promise.all(ids.map((id) => get(`/runs/${id}/summary`).catch(() => null)));
	const pts = [];
	ids.forEach((id, i) => {
		const m = sums[i] && sums[i].metrics;
		if (!m || !m.output_token_throughput || !m.output_token_throughput_per_user) return;
		const y = m.output_token_throughput_per_user.avg;
		if (typeof y !== 'number') return;
		pts.push({ id: Number(id), x: m.output_token_throughput.avg, y });
	});
	if (!pts.length) {
		out.append(stateBox('None of these runs has a summary with output token figures.'));
		return;
	}
	const front = new Set(paretoFront(pts).map((p) => p.id));
	pts.sort((a, b) => a.x - b.x || a.y - b.y);
	const box = el('div', { class: 'charts', id: 'pareto' });
	out.append(el('p', { class: 'muted' }, 'Each run by its output tokens per second (x) and mean output tokens per second per user (y); the line joins the Pareto front, the runs no other beats on both.'), box,
		el('table', { id: 'pareto-runs' }, el('thead', {}, el('tr', {}, el('th', {}, 'run'),
			el('th', { class: 'num' }, 'output tokens/s'), el('th', { class: 'num' }, 'tokens/s/user'), el('th', {}, 'on the front'))),
		el('tbody', {}, pts.map((p) => el('tr', { dataset: { run: p.id } }, el('td', {}, el('a', { href: `/runs/${p.id}` }, p.id)),
			el('td', { class: 'num' }, num(p.x)), el('td', { class: 'num' }, num(p.y)),
			el('td', { class: front.has(p.id) ? 'better' : 'muted', dataset: { front: front.has(p.id) } },
				front.has(p.id) ? 'yes' : 'no'))))));
	show();
	scatter(box, 'Output tokens/s against tokens/s per user', pts.map((p) => p.x), [
		{ label: 'runs', values: pts.map((p) => p.y) },
		{ label: 'Pareto front', values: pts.map((p) => (front.has(p.id) ? p.y : null)), line: true, color: '#dc3912' },
	], 'output tokens/s', 'tokens/s/user');
}
