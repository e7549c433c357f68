// view_submit.js - submit a run spec (docs/spec.md) from the browser: a JSON
// editor, the daemon's validation error shown with its field (the text of
// that member selected in the editor), and the new run's page on success.
import { send } from './api.js';
import { el } from './fmt.js';
import { go } from './app.js';

const TEMPLATE = {
	name: 'my-run',
	labels: {},
	target: { url: 'http://127.0.0.1:8000', model: 'my-model', endpoint: 'chat', stream: true },
	workload: { isl: { mean: 128, stddev: 0 }, osl: { mean: 64, stddev: 0 } },
	load: { mode: 'concurrency', concurrency: 4, requests: 100 },
	workers: 1,
};

// Selects the member the dotted path names (its last key) in the editor.
function selectField(area, field) {
	const key = field.replace(/\[\d+\]$/, '').split('.').pop();
	const at = area.value.search(new RegExp(`"${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*:`));
	if (at < 0) return;
	area.focus();
	area.setSelectionRange(at, at + key.length + 2);
	const line = area.value.slice(0, at).split('\n').length;
	area.scrollTop = Math.max(0, (line - 3) * 18);
}

export async function submitView(out, url, show) {
	const area = el('textarea', { id: 'spec', rows: 24, cols: 90, spellcheck: 'false',
		'aria-label': 'run spec (JSON)', 'aria-describedby': 'spec-error' });
	area.value = sessionStorage.getItem('headroom-draft') || JSON.stringify(TEMPLATE, null, 2);
	const err = el('div', { id: 'spec-error', role: 'alert' });
	const button = el('button', { type: 'submit' }, 'Submit');
	const form = el('form', {}, area, el('p', {}, button, ' ',
		el('span', { class: 'muted' }, 'fields: docs/spec.md; the daemon checks the spec and names the field at fault')), err);
	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		err.replaceChildren();
		sessionStorage.setItem('headroom-draft', area.value);
		let spec;
		try {
			spec = JSON.parse(area.value);
		} catch (e) {
			err.replaceChildren(el('p', { class: 'error' }, `Not JSON: ${e.message}`));
			return;
		}
		button.disabled = true;
		try {
			const r = await send('POST', '/runs', spec);
			go(`/runs/${r.id}`);
		} catch (e) {
			err.replaceChildren(el('p', { class: 'error' }, e.field ? el('b', { id: 'error-field' }, e.field) : null,
				e.field ? ': ' : '', e.message));
			if (e.field) selectField(area, e.field);
		} finally {
			button.disabled = false;
		}
	});
	out.append(el('h1', {}, 'Submit a run'), form);
	show();
}
