// charts.js - uPlot charts of the dashboard: time charts that share one
// cursor and zoom (per run page), and CDFs (one or several runs overlaid,
// linear or log value axis). uPlot is the global the classic script
// /uPlot.iife.min.js defines.
import { el } from './fmt.js';

export const COLORS = ['#3366cc', '#dc3912', '#109618', '#ff9900', '#990099', '#0099c6'];

function width(box) {
	return Math.max(300, (box.clientWidth || 600) - 14);
}

function axisColor() {
	return getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#666';
}

function axes(xLabel, yLabel, xValues) {
	const stroke = axisColor();
	const grid = { stroke: 'rgba(128,128,128,0.18)' };
	return [
		{ label: xLabel, stroke, grid, ticks: grid, values: xValues },
		{ label: yLabel, stroke, grid, ticks: grid, size: 60 },
	];
}

// Shades [a, b] of the x axis (the warm-up) behind the series.
function shade(range) {
	return {
		hooks: {
			drawClear: (u) => {
				if (!range) return;
				const x0 = u.valToPos(range[0], 'x', true), x1 = u.valToPos(range[1], 'x', true);
				const ctx = u.ctx;
				ctx.save();
				ctx.fillStyle = 'rgba(255, 170, 0, 0.12)';
				ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
				ctx.restore();
			},
		},
	};
}

// The charts of one page that zoom together (uPlot's cursor sync moves the
// cursor; a zoom of the x scale is passed on here).
const groups = new Map();
let zooming = false;

export function resetGroup(key) {
	groups.set(key, new Set());
}

function linkZoom(key) {
	if (!groups.has(key)) groups.set(key, new Set());
	return {
		hooks: {
			init: (u) => groups.get(key).add(u),
			destroy: (u) => groups.get(key).delete(u),
			setScale: (u, scale) => {
				if (scale !== 'x' || zooming) return;
				zooming = true;
				for (const o of groups.get(key))
					if (o !== u) o.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
				zooming = false;
			},
		},
	};
}

// A chart over time: xs in seconds on the run's clock; series
// [{label, values, color?, unit?}]. opts: {sync, warmup: [s, s], yLabel}.
export function timeChart(parent, title, xs, series, opts = {}) {
	const box = el('div', { class: 'chart', dataset: { chart: title, points: xs.length } },
		el('h3', {}, title));
	parent.append(box);
	const s = [{ label: 'time (s)', value: (u, v) => v === null ? '-' : v.toFixed(3) + ' s' }];
	series.forEach((x, i) => s.push({
		label: x.label, stroke: x.color || COLORS[i % COLORS.length], width: 1.5,
		spanGaps: !!x.gaps, points: { show: xs.length < 80 },
		value: (u, v) => v === null || v === undefined ? '-' : `${+v.toPrecision(4)} ${x.unit || ''}`,
	}));
	const u = new uPlot({
		width: width(box), height: 220, series: s,
		axes: axes('time since start (s)', opts.yLabel || ''),
		scales: { x: { time: false } },
		cursor: { sync: { key: opts.sync || 'run', setSeries: true }, drag: { x: true, y: false } },
		plugins: [shade(opts.warmup), linkZoom(opts.sync || 'run')],
	}, [xs, ...series.map((x) => x.values)], box);
	return u;
}

// The same for series sampled at their own times ([{label, xs, ys, unit}]):
// one x array, the union of their times, each series null where it has no
// sample (lines drawn across). The chart's points: every sample.
export function sampledChart(parent, title, series, opts = {}) {
	const all = [].concat(...series.map((x) => x.xs)).sort((a, b) => a - b);
	const xs = all.filter((v, i) => i === 0 || v !== all[i - 1]);
	const at = new Map(xs.map((v, i) => [v, i]));
	const cols = series.map((x) => {
		const y = new Array(xs.length).fill(null);
		x.xs.forEach((t, i) => { y[at.get(t)] = x.ys[i]; });
		return { label: x.label, values: y, unit: x.unit, gaps: true };
	});
	const u = timeChart(parent, title, xs, cols, opts);
	u.root.parentNode.dataset.points = series.reduce((n, x) => n + x.xs.length, 0);
	return u;
}

// Sorted copy of the finite numbers of values.
export function sorted(values) {
	return values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
}

// CDF chart of one or more sets [{label, values (sorted), fractions?}]: one
// point per value, at (value, fraction), the fraction (i + 1) / n unless
// given (GET /runs/{id}/distribution). Log checkbox switches the value axis.
export function cdfChart(parent, title, sets, unit) {
	const box = el('div', { class: 'chart', dataset: { chart: title } });
	const log = el('input', { type: 'checkbox', 'aria-label': title + ': log scale' });
	box.append(el('h3', {}, title, ' ', el('label', { class: 'muted' }, log, ' log scale')));
	parent.append(box);
	box.dataset.points = sets.map((s) => s.values.length).join(',');
	// uPlot needs one x array: the union of the values, each set's fraction
	// where it has that value, null elsewhere (gaps spanned).
	const xs = sorted([].concat(...sets.map((s) => s.values)));
	const uniq = xs.filter((v, i) => i === 0 || v !== xs[i - 1]);
	const index = new Map(uniq.map((v, i) => [v, i]));
	const ys = sets.map((s) => {
		const y = new Array(uniq.length).fill(null);
		s.values.forEach((v, i) => { y[index.get(v)] = s.fractions ? s.fractions[i] : (i + 1) / s.values.length; });
		return y;
	});
	let u = null;
	function draw() {
		if (u) u.destroy();
		const positive = uniq.length && uniq[0] > 0;
		const distr = log.checked && positive ? 3 : 1;
		u = new uPlot({
			width: width(box), height: 240,
			series: [{ label: unit, value: (u, v) => v === null ? '-' : `${+v.toPrecision(4)} ${unit}` },
				...sets.map((s, i) => ({
					label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true,
					points: { show: false },
					value: (u, v) => v === null ? '-' : (v * 100).toFixed(1) + '%',
				}))],
			axes: axes(unit, 'fraction of requests'),
			scales: { x: { time: false, distr }, y: { range: [0, 1] } },
			cursor: { drag: { x: true, y: false } },
		}, [uniq, ...ys], box);
	}
	log.addEventListener('change', draw);
	if (!uniq.length) box.append(el('p', { class: 'state' }, 'no values to plot'));
	else draw();
	return box;
}

// A histogram of one set {values (sorted), fractions, exact}: bins equal
// bins of equal width from the smallest value to the largest, each bar the
// share of requests in it (every value counted when exact; else the share
// read off the CDF's quantiles, linear between them).
export function histChart(parent, title, set, unit, bins = 40) {
	const v = set.values;
	const box = el('div', { class: 'chart', dataset: { chart: title } }, el('h3', {}, title));
	parent.append(box);
	if (!v.length) {
		box.append(el('p', { class: 'state' }, 'no values to plot'));
		return box;
	}
	const lo = v[0], hi = v[v.length - 1], w = (hi - lo) / bins || 1;
	let share = new Array(bins).fill(0);
	let counted = '';
	if (set.exact) {
		const counts = new Array(bins).fill(0);
		for (const x of v) counts[Math.min(bins - 1, Math.floor((x - lo) / w))]++;
		counted = counts.reduce((a, b) => a + b, 0);
		share = counts.map((c) => c / v.length);
	} else {
		const cdf = (x) => { // linear between the quantile points
			let i = 1;
			while (i < v.length && v[i] < x) i++;
			if (i >= v.length) return 1;
			const a = v[i - 1], b = v[i], fa = set.fractions[i - 1], fb = set.fractions[i];
			return b > a ? fa + (fb - fa) * (x - a) / (b - a) : fb;
		};
		for (let b = 0; b < bins; b++) share[b] = cdf(lo + (b + 1) * w) - (b ? cdf(lo + b * w) : 0);
	}
	box.dataset.bins = bins;
	box.dataset.count = counted; // the values in the bins (exact sets)
	const xs = share.map((_, b) => lo + (b + 0.5) * w);
	new uPlot({
		width: width(box), height: 220,
		series: [{ label: unit, value: (u, x) => x === null ? '-' : `${+x.toPrecision(4)} ${unit}` },
			{ label: 'share of requests', stroke: COLORS[0], fill: 'rgba(51,102,204,0.35)',
				paths: uPlot.paths.bars({ size: [0.95, 100] }), points: { show: false },
				value: (u, y) => y === null ? '-' : (y * 100).toFixed(1) + '%' }],
		axes: axes(unit, 'share of requests'),
		scales: { x: { time: false } },
	}, [xs, share], box);
	box.shares = share;
	return box;
}
