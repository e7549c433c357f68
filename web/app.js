// app.js - the dashboard's entry: the token field, the theme, and the
// router. A URL is a view: / (runs), /runs/ID (one run), /compare?base=A&head=B,
// /submit, /trends, /pareto?runs=A,B;
// links inside the page change the URL without reloading (history API), and
// the daemon serves this page at each of them, so they can be bookmarked.
import { setToken, token } from './api.js';
import { stateBox } from './fmt.js';
import { runsView } from './view_runs.js';
import { runView } from './view_run.js';
import { compareView } from './view_compare.js';
import { submitView } from './view_submit.js';
import { trendsView, paretoView } from './view_trends.js';

const main = document.getElementById('view');
let generation = 0;

export function go(url) {
	history.pushState(null, '', url);
	route();
}

async function route() {
	const my = ++generation;
	const url = new URL(location.href);
	const m = /^\/runs\/(\d+)\/?$/.exec(url.pathname);
	main.replaceChildren(stateBox('Loading…'));
	// a view renders into a fresh node, swapped in when done (no layout jumps
	// from half-built pages; a later navigation wins over a slow one)
	const out = document.createElement('div');
	const show = () => { if (my === generation) main.replaceChildren(out); };
	try {
		if (url.pathname === '/' || url.pathname === '/index.html') {
			document.title = 'headroom: runs';
			await runsView(out, url, show);
		} else if (m) {
			document.title = `headroom: run ${m[1]}`;
			await runView(out, Number(m[1]), show);
		} else if (url.pathname === '/trends') {
			document.title = 'headroom: trends';
			await trendsView(out, url, show);
		} else if (url.pathname === '/pareto') {
			document.title = 'headroom: throughput against speed';
			await paretoView(out, url, show);
		} else if (url.pathname === '/submit') {
			document.title = 'headroom: submit';
			await submitView(out, url, show);
		} else if (url.pathname === '/compare') {
			document.title = 'headroom: compare';
			await compareView(out, url, show);
		} else {
			out.append(stateBox(`There is no page at ${url.pathname}.`, 'error'));
		}
	} catch (e) {
		out.replaceChildren(stateBox(e.message, 'error'));
	}
	show();
}

// same-origin links navigate inside the app
document.addEventListener('click', (ev) => {
	const a = ev.target.closest('a');
	if (!a || a.target || a.hasAttribute('download') || ev.ctrlKey || ev.metaKey || ev.shiftKey ||
		ev.button !== 0) return;
	const url = new URL(a.href, location.href);
	if (!/^https?:$/.test(url.protocol) || url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
	ev.preventDefault();
	go(url.pathname + url.search);
});
window.addEventListener('popstate', route);

const tokenInput = document.getElementById('token');
tokenInput.value = token();
tokenInput.addEventListener('change', () => {
	setToken(tokenInput.value.trim());
	route();
});

const root = document.documentElement;
const saved = localStorage.getItem('headroom-theme');
if (saved ? saved === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches)
	root.classList.add('dark');
document.getElementById('theme').addEventListener('click', () => {
	root.classList.toggle('dark');
	localStorage.setItem('headroom-theme', root.classList.contains('dark') ? 'dark' : 'light');
	route();
});

route();
