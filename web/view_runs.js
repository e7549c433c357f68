// view_runs.js - the runs list: filters (name, state, labels, dates) and
// sort kept in the URL, server-side paging with the list's cursors, each
// finished run's headline figures from its summary, and a selection of two
// runs to compare.
import { get } from './api.js';
import { el, num, stateBox, time } from './fmt.js';
import { go } from './app.js';

const PAGE = 50;
// [title, summary metric, statistic, server sort key, unit]
const FIGURES = [
	['TTFT p50', 'time_to_first_token', 'p50', 'time_to_first_token.p50', 'ms'],
	['TTFT p99', 'time_to_first_token', 'p99', 'time_to_first_token.p99', 'ms'],
	['ITL p50', 'inter_token_latency', 'p50', 'inter_token_latency.p50', 'ms'],
	['throughput', 'request_throughput', 'avg', 'request_throughput.value', 'req/s'],
	['goodput', 'goodput', 'avg', 'goodput.value', 'req/s'],
];

// "model=llama3 gpu!=H100 branch draft!" -> [["label.model", "llama3"], ...]
export function labelParams(text) {
	const out = [];
	for (const sel of (text || '').split(/[\s,]+/).filter(Boolean)) {
		const m = /^([^=!]+)(!?=|!)?(.*)$/.exec(sel);
		if (!m) continue;
		if (m[2] === '=' || m[2] === '!=') out.push([`label.${m[1]}${m[2] === '!=' ? '!' : ''}`, m[3]]);
		else out.push([`label.${m[1]}${m[2] === '!' ? '!' : ''}`, null]);
	}
	return out;
}

function listQuery(f, cursor) {
	const q = [['limit', String(PAGE)]];
	for (const k of ['name', 'state', 'since', 'until', 'sort'])
		if (f.get(k)) q.push([k, f.get(k)]);
	q.push(...labelParams(f.get('labels')));
	if (cursor) q.push(['cursor', cursor]);
	return q.map(([k, v]) => encodeURIComponent(k) + (v === null ? '' : '=' + encodeURIComponent(v)))
		.join('&');
}

// An inline SVG of a series' values (oldest left), this run's point marked.
function sparkline(s, id) {
	if (!s || s.points.length < 2) return el('span', { class: 'muted' }, '-');
	const v = s.points.map((p) => p.value), lo = Math.min(...v), hi = Math.max(...v);
	const W = 80, H = 18, x = (i) => (i * (W - 4)) / (v.length - 1) + 2;
	const y = (val) => (hi > lo ? H - 2 - ((val - lo) * (H - 4)) / (hi - lo) : H / 2);
	const ns = 'http://www.w3.org/2000/svg';
	const svg = document.createElementNS(ns, 'svg');
	svg.setAttribute('width', W);
	svg.setAttribute('height', H);
	svg.setAttribute('role', 'img');
	svg.setAttribute('aria-label', `TTFT p99 of ${v.length} runs of this spec: ${v.map((a) => num(a)).join(', ')} ms`);
	svg.dataset.points = v.length;
	const line = document.createElementNS(ns, 'polyline');
	line.setAttribute('points', v.map((a, i) => `${x(i).toFixed(1)},${y(a).toFixed(1)}`).join(' '));
	line.setAttribute('fill', 'none');
	line.setAttribute('stroke', 'currentColor');
	svg.append(line);
	const at = s.points.findIndex((p) => String(p.key) === String(id));
	if (at >= 0) {
		const dot = document.createElementNS(ns, 'circle');
		dot.setAttribute('cx', x(at));
		dot.setAttribute('cy', y(v[at]));
		dot.setAttribute('r', 2.5);
		dot.setAttribute('fill', '#dc3912');
		svg.append(dot);
	}
	return svg;
}

function field(label, input) {
	return el('label', {}, label, input);
}

export async function runsView(out, url, show) {
	const f = url.searchParams;
	const form = el('form', { class: 'filters', role: 'search' });
	const inputs = {
		name: el('input', { name: 'name', value: f.get('name') || '', size: 14 }),
		state: el('select', { name: 'state' }, ['', 'queued', 'running', 'succeeded', 'failed',
			'cancelled', 'interrupted'].map((s) => el('option', { value: s, selected: f.get('state') === s },
			s || 'any'))),
		labels: el('input', { name: 'labels', value: f.get('labels') || '', size: 26,
			placeholder: 'model=llama3 gpu!=H100 branch' }),
		since: el('input', { name: 'since', type: 'date', value: f.get('since') || '' }),
		until: el('input', { name: 'until', type: 'date', value: f.get('until') || '' }),
	};
	form.append(field('name contains', inputs.name), field('state', inputs.state),
		field('labels', inputs.labels), field('submitted since', inputs.since),
		field('until', inputs.until), el('button', { type: 'submit' }, 'Filter'));
	form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		const q = new URLSearchParams();
		for (const [k, i] of Object.entries(inputs)) if (i.value) q.set(k, i.value);
		if (f.get('sort')) q.set('sort', f.get('sort'));
		go('/' + (q.toString() ? '?' + q : ''));
	});
	const selected = new Set();
	const cmp = el('button', { type: 'button', disabled: true, id: 'compare' }, 'Compare 2 selected runs');
	cmp.addEventListener('click', () => {
		const [a, b] = [...selected].sort((x, y) => x - y);
		go(`/compare?base=${a}&head=${b}`);
	});
	const pareto = el('button', { type: 'button', disabled: true, id: 'pareto' }, 'Throughput vs speed');
	pareto.addEventListener('click', () => go(`/pareto?runs=${[...selected].sort((x, y) => x - y).join(',')}`));
	out.append(el('h1', {}, 'Runs'), form, el('p', {}, cmp, ' ', pareto, ' ',
		el('span', { class: 'muted' }, 'compare: pick two runs (the older is the base); throughput vs speed: two or more')));

	const pageBox = el('div');
	out.append(pageBox);
	const cursors = [null];
	let pageNo = 0;
	let lastNext = null;
	let trends = new Map();

	function sortHeader(title, key) {
		const cur = f.get('sort') || '-id';
		const mark = cur === key ? ' ▲' : cur === '-' + key ? ' ▼' : '';
		const next = cur === '-' + key ? key : '-' + key;
		const b = el('button', { class: 'sort', type: 'button', title: `sort by ${title}` }, title + mark);
		b.addEventListener('click', () => {
			const q = new URLSearchParams(f);
			q.set('sort', next);
			go('/?' + q);
		});
		return b;
	}

	async function loadPage() {
		const list = await get('/runs?' + listQuery(f, cursors[pageNo]));
		const figures = await Promise.all(list.runs.map((r) => r.state === 'queued' ||
			r.state === 'running' ? null : get(`/runs/${r.id}/summary`).catch(() => null)));
		const rows = list.runs.map((r, i) => ({ run: r, summary: figures[i] }));
		// a small trend per fingerprint: its last 20 runs' TTFT p99 (GET /series)
		const fps = [...new Set(list.runs.map((r) => r.fingerprint).filter(Boolean))];
		const series = await Promise.all(fps.map((fp) => get(`/series?metric=time_to_first_token&stat=p99` +
			`&fingerprint=${fp}&limit=20`).catch(() => null)));
		trends = new Map(fps.map((fp, i) => [fp, series[i]]));
		lastNext = list.next_cursor;
		render(rows, lastNext);
	}

	function render(rows, next) {
		const head = el('tr', {}, el('th', {}, el('span', { class: 'muted' }, 'pick')),
			el('th', { class: 'num' }, sortHeader('id', 'id')), el('th', {}, sortHeader('name', 'name')),
			el('th', {}, 'state'), el('th', {}, 'submitted'), el('th', {}, 'labels'),
			el('th', { class: 'num' }, 'requests'),
			FIGURES.map(([t, , , key, unit]) => el('th', { class: 'num' }, sortHeader(`${t}`, key),
				el('span', { class: 'muted' }, ` (${unit})`))),
			el('th', {}, el('span', { title: 'TTFT p99 of the last 20 succeeded runs of the same spec' }, 'trend')),
			el('th', {}, sortHeader('verdict', 'verdict')),
			el('th', {}, sortHeader('valid', 'valid')));
		const body = el('tbody');
		for (const { run: r, summary: s } of rows) {
			const box = el('input', { type: 'checkbox', 'aria-label': `select run ${r.id}`,
				checked: selected.has(r.id) });
			box.addEventListener('change', () => {
				if (box.checked) selected.add(r.id); else selected.delete(r.id);
				cmp.disabled = selected.size !== 2;
				pareto.disabled = selected.size < 2;
				cmp.textContent = selected.size === 2 ? 'Compare 2 selected runs'
					: `Compare 2 selected runs (${selected.size} picked)`;
			});
			const m = s ? s.metrics : {};
			body.append(el('tr', { dataset: { run: r.id } },
				el('td', {}, box),
				el('td', { class: 'num' }, el('a', { href: `/runs/${r.id}` }, r.id)),
				el('td', {}, r.name || ''),
				el('td', { class: r.state }, r.state),
				el('td', { class: 'time' }, time(r.created_at)),
				el('td', { class: 'labels' }, Object.entries(r.labels || {}).map(([k, v]) =>
					el('span', {}, `${k}=${v}`))),
				el('td', { class: 'num' }, s ? num(s.counts.requests) :
					r.progress ? num(r.progress.completed) : '-'),
				FIGURES.map(([, metric, stat]) => {
					const v = m[metric] ? m[metric][stat] : undefined;
					return el('td', { class: 'num', dataset: { metric: `${metric}.${stat}`,
						value: v === undefined ? '' : v } }, num(v));
				}),
				el('td', {}, sparkline(trends.get(r.fingerprint), r.id)),
				el('td', { class: r.verdict || 'muted' }, r.verdict || '-'),
				el('td', { class: r.valid === null ? 'muted' : r.valid ? 'valid' : 'invalid' },
					r.valid === null ? '-' : r.valid ? 'valid' : 'invalid')));
		}
		const prev = el('button', { type: 'button', disabled: pageNo === 0 }, '← newer page');
		const nextB = el('button', { type: 'button', disabled: !next }, 'next page →');
		prev.addEventListener('click', () => { pageNo--; loadPage().catch(fail); });
		nextB.addEventListener('click', () => {
			cursors[pageNo + 1] = next;
			pageNo++;
			loadPage().catch(fail);
		});
		pageBox.replaceChildren(
			rows.length ? el('div', { class: 'scroll' }, el('table', { id: 'runs' }, el('thead', {}, head), body))
				: stateBox(f.toString() ? 'No run matches these filters.' :
					'No runs yet: submit one with `headroom submit SPEC.json`.'),
			el('div', { class: 'pager' }, prev, el('span', { class: 'muted' }, `page ${pageNo + 1}`), nextB));
	}

	function fail(e) {
		pageBox.replaceChildren(stateBox(e.message, 'error'));
	}

	try {
		await loadPage();
	} catch (e) {
		fail(e);
	}
	show();
}
