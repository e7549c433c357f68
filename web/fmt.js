// fmt.js - building DOM nodes and writing numbers with their units.

// el('td', {class: 'num', dataset: {v: 3}}, 'text', child...) -> element.
export function el(tag, attrs, ...kids) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === null || v === undefined || v === false) continue;
		if (k === 'class') e.className = v;
		else if (k === 'dataset') Object.assign(e.dataset, v);
		else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
		else e.setAttribute(k, v === true ? '' : v);
	}
	for (const c of kids.flat()) {
		if (c === null || c === undefined || c === false) continue;
		e.append(c instanceof Node ? c : String(c));
	}
	return e;
}

// A number to at most 4 significant digits (integers kept whole), '-' for none.
export function num(x) {
	if (x === null || x === undefined || Number.isNaN(x)) return '-';
	if (typeof x !== 'number') return String(x);
	if (Number.isInteger(x) && Math.abs(x) < 1e15) return x.toLocaleString('en-US');
	const a = Math.abs(x);
	if (a >= 1000) return x.toLocaleString('en-US', { maximumFractionDigits: 1 });
	if (a === 0) return '0';
	return Number(x.toPrecision(4)).toString();
}

export function withUnit(x, unit) {
	const s = num(x);
	return s === '-' || !unit ? s : `${s} ${unit}`;
}

export function pct(x) {
	return x === null || x === undefined ? '-' : `${x > 0 ? '+' : ''}${num(x)}%`;
}

export function time(iso) {
	if (!iso) return '-';
	return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function duration(a, b) {
	if (!a || !b) return '-';
	return withUnit((Date.parse(b) - Date.parse(a)) / 1000, 's');
}

// The message box of an empty, loading or failed state.
export function stateBox(text, cls) {
	return el('p', { class: 'state ' + (cls || ''), role: cls === 'error' ? 'alert' : 'status' }, text);
}
