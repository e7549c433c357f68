// api.js - the dashboard's only way to the daemon: fetch under /api/v1 with
// the tab's API token (sessionStorage) in the Authorization header, never a
// cookie (docs/security.md). Errors become ApiError with the daemon's
// {"error": {code, message, field}} when it sent one.

const KEY = 'headroom-token';

export function token() {
	return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
	if (t) sessionStorage.setItem(KEY, t);
	else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
	constructor(status, code, message, field) {
		super(message);
		this.status = status;
		this.code = code;
		this.field = field;
	}
}

function explain(status) {
	if (status === 401) return 'this daemon requires an API token (or the one given is unknown): type it in above';
	if (status === 403) return 'this token may not do that';
	if (status === 503) return 'the daemon is busy: try again in a moment';
	return `the daemon answered ${status}`;
}

// GET (or another method) of /api/v1 + path; returns the Response.
export async function raw(path, opts = {}) {
	const headers = Object.assign({}, opts.headers || {});
	const t = token();
	if (t) headers.Authorization = 'Bearer ' + t;
	let res;
	try {
		res = await fetch('/api/v1' + path, Object.assign({}, opts, { headers, credentials: 'omit' }));
	} catch (e) {
		throw new ApiError(0, 'network', 'the daemon cannot be reached: ' + e.message, null);
	}
	if (!res.ok) {
		let body = null;
		try { body = await res.json(); } catch (e) { /* not JSON */ }
		const err = body && body.error;
		// a missing or unknown token is the reader's to fix here: say where
		throw new ApiError(res.status, err ? err.code : 'http',
			res.status === 401 || !err ? explain(res.status) : err.message, err ? err.field : null);
	}
	return res;
}

export async function get(path) {
	return (await raw(path)).json();
}

// A run's records (JSON lines) as objects.
export async function records(id) {
	const text = await (await raw(`/runs/${id}/records`)).text();
	const out = [];
	for (const line of text.split('\n')) if (line) out.push(JSON.parse(line));
	return out;
}

// A write: method, path, JSON body (or none); returns the parsed answer or null.
export async function send(method, path, body) {
	const opts = { method };
	if (body !== undefined) {
		opts.body = JSON.stringify(body);
		opts.headers = { 'Content-Type': 'application/json' };
	}
	const res = await raw(path, opts);
	const text = await res.text();
	return text ? JSON.parse(text) : null;
}

// Metrics' CDFs of a run, from one GET /distribution: {metric: {values, fractions, count}}.
export async function distributions(id, metrics) {
	const d = await get(`/runs/${id}/distribution?metric=${metrics.join(',')}&points=1000`);
	return Object.fromEntries(d.metrics.map((m) => [m.metric, m]));
}
