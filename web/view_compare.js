// view_compare.js - two runs (or sets of runs) compared with GET /compare:
// each side, the delta table with intervals and verdicts coloured by
// direction, warnings, spec and label differences, and (one run a side)
// their CDFs overlaid.
import { get, distributions } from './api.js';
import { el, num, pct, stateBox } from './fmt.js';
import { cdfChart } from './charts.js';

function side(name, s) {
	return el('div', {}, el('b', {}, name),
		el('a', { href: s.n_runs === 1 ? `/runs/${s.runs[0]}` : '#' }, ` ${s.ref}`),
		` ${s.name || ''} (${s.n_runs} run${s.n_runs === 1 ? '' : 's'}${s.records ? `, ${num(s.records)} records` : ''})`);
}

export async function compareView(out, url, show) {
	const base = url.searchParams.get('base'), head = url.searchParams.get('head');
	out.append(el('h1', {}, 'Compare'));
	if (!base || !head) {
		out.append(stateBox('Pick two runs in the runs list, or open /compare?base=ID&head=ID.'));
		return;
	}
	const c = await get(`/compare?base=${encodeURIComponent(base)}&head=${encodeURIComponent(head)}`);
	out.append(el('div', { class: 'cards' }, side('base', c.base), side('head', c.head),
		el('div', {}, el('b', {}, 'level'), c.level), el('div', {}, el('b', {}, 'confidence'), `${c.confidence * 100}%`),
		el('div', {}, el('b', {}, 'verdicts'), Object.entries(c.counts).map(([k, v]) =>
			el('span', { class: k }, `${v} ${k} `)))));
	if (c.warnings.length) out.append(el('ul', {}, c.warnings.map((w) =>
		el('li', { class: 'error' }, `${w.side}: ${w.message}`))));
	const body = el('tbody');
	for (const m of c.metrics) {
		body.append(el('tr', { dataset: { metric: `${m.metric}.${m.stat}` } },
			el('th', {}, m.metric), el('td', {}, m.stat), el('td', { class: 'muted' }, m.unit),
			el('td', { class: 'num', dataset: { col: 'base' } }, num(m.base)),
			el('td', { class: 'num', dataset: { col: 'head' } }, num(m.head)),
			el('td', { class: 'num' }, num(m.diff)), el('td', { class: 'num' }, pct(m.diff_pct)),
			el('td', { class: 'num muted' }, m.ci_pct ? `${pct(m.ci_pct[0])} … ${pct(m.ci_pct[1])}` :
				m.ci ? `${num(m.ci[0])} … ${num(m.ci[1])}` : '-'),
			el('td', { class: m.verdict, dataset: { col: 'verdict' } }, m.verdict),
			el('td', { class: 'muted' }, m.method)));
	}
	out.append(el('h2', {}, 'Figures (head − base)'), el('div', { class: 'scroll' }, el('table', { id: 'compare-table' },
		el('thead', {}, el('tr', {}, ['metric', 'stat', 'unit'].map((h) => el('th', {}, h)),
			['base', 'head', 'difference', 'difference %', `${c.confidence * 100}% interval`].map((h) =>
				el('th', { class: 'num' }, h)), el('th', {}, 'verdict'), el('th', {}, 'method'))), body)));
	const diffs = [...c.spec_differences.map((d) => [d.field, d.base, d.head]),
		...c.label_differences.map((d) => [`label ${d.label}`, d.base, d.head])];
	out.append(el('h2', {}, 'Spec and label differences'), diffs.length ? el('table', { id: 'spec-diff' },
		el('thead', {}, el('tr', {}, el('th', {}, 'field'), el('th', {}, 'base'), el('th', {}, 'head'))),
		el('tbody', {}, diffs.map(([f, a, b]) => el('tr', {}, el('td', {}, f),
			el('td', {}, JSON.stringify(a)), el('td', {}, JSON.stringify(b)))))) :
		stateBox('The specs and labels are the same.'));
	if (c.base.n_runs === 1 && c.head.n_runs === 1) {
		const box = el('div', { class: 'charts', id: 'cdfs' });
		out.append(el('h2', {}, 'Distributions overlaid'), box);
		const metrics = [['time_to_first_token', 'TTFT'], ['request_latency', 'request latency'],
			['inter_token_latency', 'inter-token latency']];
		const [a, b] = await Promise.all([c.base.runs[0], c.head.runs[0]].map((id) =>
			distributions(id, metrics.map(([k]) => k))));
		const sets = metrics.map(([k]) => [{ label: `base ${c.base.ref}`, ...a[k] }, { label: `head ${c.head.ref}`, ...b[k] }]);
		show();
		metrics.forEach(([, t], i) => cdfChart(box, `CDF: ${t}`, sets[i], 'ms'));
	}
}
