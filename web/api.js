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

// The server-sent events of path (GET /runs/{id}/live): onEvent(type, data)
// for each event, onFail(error) once when the stream cannot go on (the
// caller then falls back to polling). An EventSource when no token is set;
// with one (an EventSource cannot send headers) the same stream read
// through fetch with the Authorization header. After the end event the
// daemon closes the stream; the EventSource is closed then (not before:
// its request ends whole), so that it does not connect again. Returns
// {kind, close()}.
export function events(path, onEvent, onFail) {
	let failed = false, ended = false;
	const fail = (e) => { if (!failed && !ended) { failed = true; onFail(e); } };
	const deliver = (type, data) => {
		if (type === 'end') ended = true;
		onEvent(type, data);
	};
	if (!token() && typeof EventSource === 'function') {
		const es = new EventSource('/api/v1' + path);
		for (const type of ['hello', 'progress', 'second', 'end'])
			es.addEventListener(type, (ev) => deliver(type, JSON.parse(ev.data)));
		// a dropped connection is retried by the browser; a refused one closes
		es.onerror = () => {
			if (ended) es.close();
			else if (es.readyState === EventSource.CLOSED) fail(new Error('the live stream was refused'));
		};
		return { kind: 'eventsource', close: () => { failed = true; es.close(); } };
	}
	const ctl = new AbortController();
	(async () => {
		const res = await raw(path, { signal: ctl.signal, headers: { Accept: 'text/event-stream' } });
		const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
		let buf = '';
		for (;;) {
			const { value, done } = await reader.read();
			if (done) break;
			buf += value;
			let i;
			while ((i = buf.indexOf('\n\n')) >= 0) {
				const block = buf.slice(0, i);
				buf = buf.slice(i + 2);
				let type = 'message', data = '';
				for (const line of block.split('\n')) {
					if (line.startsWith('event:')) type = line.slice(6).trim();
					else if (line.startsWith('data:')) data += line.slice(5).trim();
				}
				if (data) deliver(type, JSON.parse(data));
			}
		}
		throw new Error('the live stream ended');
	})().catch((e) => { if (!ctl.signal.aborted) fail(e); });
	return { kind: 'fetch', close: () => { failed = true; ctl.abort(); } };
}
