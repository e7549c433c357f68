// test_manifests.mjs - packaging/kubernetes/ checked offline (validate.mjs):
// secrets.sh run against a stand-in kubectl (no cluster) for the Secrets
// and ConfigMap it would apply; every manifest and those objects against
// the Kubernetes API's types and the references between them; the bundle
// kubectl kustomize renders; the key and certificate files the programs
// are told to read; headroomd's configuration through headroomd
// --check-config. Then broken copies (a misspelled field, wrong types, a
// missing required field, bad references, a script that makes the wrong
// Secret) must each be refused with the finding that names them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { parseManifests, schemaErrors, ruleErrors, referenceErrors, format } from './validate.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = process.env.HEADROOM_SRC || path.resolve(here, '..', '..');
const dir = path.join(src, 'packaging', 'kubernetes');
const bin = process.env.HEADROOM_BIN;
const kustomization = YAML.parse(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'));
const manifestFiles = fs.readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');

// Runs secrets.sh (its text: scriptText) as a user would, but with stand-ins
// on the PATH: headroomd and headroom-agent whose keygen writes placeholder
// keys, and a kubectl that renders with the real one (create ...
// --dry-run=client -o yaml) and records what would be applied instead of
// reaching a cluster. Twice, to show a second run keeps the keys. Returns
// the applied objects as documents of 'secrets.sh'.
function runSecrets(scriptText) {
	let realKubectl;
	try {
		realKubectl = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();
	} catch {
		throw new Error('kubectl is needed (packaging/install-deps.sh installs kubernetes-client); no cluster is used');
	}
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hr-k8s-secrets-'));
	try {
		const shims = path.join(tmp, 'bin');
		const out = path.join(tmp, 'applied');
		const pkg = path.join(tmp, 'kubernetes');
		for (const d of [shims, out, pkg])
			fs.mkdirSync(d);
		fs.writeFileSync(path.join(pkg, 'secrets.sh'), scriptText, { mode: 0o755 });
		fs.copyFileSync(path.join(dir, 'namespace.yaml'), path.join(pkg, 'namespace.yaml'));
		const keygen = '#!/bin/sh\n[ "$1" = keygen ] && [ $# -eq 2 ] || exit 2\n' +
			'echo "placeholder-public-$(basename "$2")" >"$2.pub"\n' +
			'echo "placeholder-secret-$(basename "$2")" >"$2.key"\n';
		fs.writeFileSync(path.join(shims, 'headroomd'), keygen, { mode: 0o755 });
		fs.writeFileSync(path.join(shims, 'headroom-agent'), keygen, { mode: 0o755 });
		fs.writeFileSync(path.join(shims, 'kubectl'), '#!/bin/sh\n' +
			'if [ "$1" = apply ] && [ "$2" = -f ] && [ $# -eq 3 ]; then\n' +
			'	n=$(ls "$APPLIED" | wc -l)\n' +
			'	if [ "$3" = - ]; then cat >"$APPLIED/$n.yaml"; else cat "$3" >"$APPLIED/$n.yaml"; fi\n' +
			'	exit 0\nfi\n' +
			'case " $* " in *" apply "*) echo "kubectl stand-in: unexpected $*" >&2; exit 2;; esac\n' +
			`exec "${realKubectl}" "$@"\n`, { mode: 0o755 });
		const env = { ...process.env, PATH: `${shims}:${process.env.PATH}`, APPLIED: out };
		delete env.HEADROOM_NAMESPACE; // the defaults, whatever the caller's shell says
		delete env.HEADROOM_IMAGE;
		const keys = path.join(tmp, 'keys');
		execFileSync(path.join(pkg, 'secrets.sh'), [keys], { env, stdio: 'pipe' });
		const cert = fs.readFileSync(path.join(keys, 'tls.crt'), 'utf8');
		assert.equal(fs.statSync(keys).mode & 0o777, 0o700, 'the key directory is not mode 700');
		fs.rmSync(out, { recursive: true });
		fs.mkdirSync(out);
		execFileSync(path.join(pkg, 'secrets.sh'), [keys], { env, stdio: 'pipe' });
		assert.equal(fs.readFileSync(path.join(keys, 'tls.crt'), 'utf8'), cert, 'a second run replaced the certificate');
		const files = fs.readdirSync(out).sort((x, y) => parseInt(x, 10) - parseInt(y, 10));
		return files.flatMap((f) => parseManifests(fs.readFileSync(path.join(out, f), 'utf8'), 'secrets.sh'));
	} finally {
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}
const secretsScript = fs.readFileSync(path.join(dir, 'secrets.sh'), 'utf8');
const applied = runSecrets(secretsScript);

// The data keys of the ConfigMap or Secret kind/name in docs, or null.
function keysOf(docs, kind, name) {
	const d = docs.find((x) => x.obj.kind === kind && x.obj.metadata?.name === name);
	return d ? Object.keys({ ...d.obj.data, ...d.obj.binaryData, ...d.obj.stringData }) : null;
}

// texts: {file: yaml text}; secrets: the objects secrets.sh applied (but
// its Namespace, namespace.yaml's). The kustomization's namespace is set on
// the objects of its resources that name none, as kustomize does.
function bundle(texts, secrets = applied) {
	const docs = [];
	for (const [file, text] of Object.entries(texts)) {
		for (const d of parseManifests(text, file)) {
			if (kustomization.resources.includes(file) && d.obj && d.obj.kind !== 'Namespace' &&
				d.obj.metadata && !d.obj.metadata.namespace)
				d.obj.metadata.namespace = kustomization.namespace;
			docs.push(d);
		}
	}
	return docs.concat(secrets.filter((d) => d.obj.kind !== 'Namespace'));
}

// Every finding for docs (a bundle that includes what secrets.sh applies).
function findings(docs) {
	return [...schemaErrors(docs), ...ruleErrors(docs), ...referenceErrors(docs), ...fileErrors(docs)];
}

function originals() {
	return Object.fromEntries(manifestFiles.map((f) => [f, fs.readFileSync(path.join(dir, f), 'utf8')]));
}

// The files the programs are told to read (headroomd.conf's tls-cert,
// tls-key, agent-key; the agent's --key and --server-key), each followed
// to the mount that holds it, its volume, and that object's keys as
// secrets.sh makes them. A PREFIX option needs PREFIX.key (and the agent's
// PREFIX.pub).
function fileErrors(docs) {
	const errors = [];
	const check = (d, container, spec, file, what) => {
		const mount = (container.volumeMounts || []).find((m) => !m.subPath &&
			file.startsWith(m.mountPath.replace(/\/$/, '') + '/'));
		const vol = mount && (spec.volumes || []).find((v) => v.name === mount.name);
		const ref = vol && (vol.secret ? ['Secret', vol.secret.secretName]
			: vol.configMap ? ['ConfigMap', vol.configMap.name] : null);
		const keys = ref && keysOf(docs, ref[0], ref[1]);
		const key = mount && file.slice(mount.mountPath.replace(/\/$/, '').length + 1);
		if (!keys || !keys.includes(key))
			errors.push({ where: `${d.file} #${d.index} ${d.obj.kind}/${d.obj.metadata.name}`,
				path: what, message: `${file} is no key of a mounted Secret or ConfigMap` });
	};
	for (const d of docs) {
		const spec = d.obj?.spec?.template?.spec;
		if (!spec)
			continue;
		for (const c of spec.containers || []) {
			const cmd = [...(c.command || []), ...(c.args || [])].join(' ');
			if (/\/headroomd$/.test((c.command || []).at(-1) || '')) {
				const conf = docs.find((x) => x.obj.kind === 'ConfigMap' &&
					x.obj.metadata.name === 'headroomd-config')?.obj.data['headroomd.conf'] || '';
				const opt = (k) => [...conf.matchAll(new RegExp(`^${k} = (\\S+)$`, 'gm'))].map((m) => m[1]);
				opt('tls-cert').forEach((f) => check(d, c, spec, f, 'headroomd.conf tls-cert'));
				opt('tls-key').forEach((f) => check(d, c, spec, f, 'headroomd.conf tls-key'));
				opt('agent-key').forEach((f) => check(d, c, spec, `${f}.key`, 'headroomd.conf agent-key'));
			}
			if (/headroom-agent/.test(cmd)) {
				const arg = (k) => { const a = c.args || []; const i = a.indexOf(k); return i >= 0 ? a[i + 1] : null; };
				const key = arg('--key');
				const server = arg('--server-key');
				if (!key || !server)
					errors.push({ where: `${d.file} ${d.obj.metadata.name}`, path: 'args', message: 'no --key or --server-key' });
				if (key) {
					check(d, c, spec, `${key}.key`, 'args --key');
					check(d, c, spec, `${key}.pub`, 'args --key');
				}
				if (server)
					check(d, c, spec, server, 'args --server-key');
			}
		}
	}
	return errors;
}

test('every manifest matches the Kubernetes API types and its references resolve', () => {
	const docs = bundle(originals());
	const kinds = docs.map((d) => `${d.obj.kind}/${d.obj.metadata.name}`).sort();
	assert.deepEqual(kinds, ['ConfigMap/headroomd-config', 'ConfigMap/headroomd-public-key',
		'Deployment/headroom-agent', 'Deployment/headroom-mock', 'Namespace/headroom',
		'Secret/headroom-agent-key', 'Secret/headroomd-agent-key', 'Secret/headroomd-tls',
		'Service/headroom-mock', 'Service/headroomd', 'StatefulSet/headroomd']);
	const errors = findings(docs);
	assert.equal(errors.length, 0, format(errors));
});

test('the kustomization names every manifest but the example server, and kubectl kustomize renders it', () => {
	assert.deepEqual([...kustomization.resources].sort(),
		manifestFiles.filter((f) => f !== 'mock.yaml').sort());
	let out;
	try {
		out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
	} catch (e) {
		assert.fail(`kubectl kustomize failed (packaging/install-deps.sh installs kubectl): ${e.message}`);
	}
	const docs = [...parseManifests(out, 'kubectl kustomize'),
		...parseManifests(fs.readFileSync(path.join(dir, 'mock.yaml'), 'utf8'), 'mock.yaml'),
		...applied.filter((d) => d.obj.kind !== 'Namespace')];
	for (const d of docs) {
		if (d.obj.kind !== 'Namespace')
			assert.equal(d.obj.metadata.namespace, 'headroom', `${d.obj.kind}/${d.obj.metadata.name}`);
	}
	const errors = findings(docs);
	assert.equal(errors.length, 0, format(errors));
	const agents = docs.find((d) => d.obj.kind === 'Deployment' && d.obj.metadata.name === 'headroom-agent');
	assert.equal(agents.obj.spec.replicas, 3);
	assert.equal(agents.obj.spec.template.spec.volumes.find((v) => v.name === 'agent-key').secret.defaultMode, 0o440);
});

test('secrets.sh applies the namespace and the Secrets and ConfigMap the pods mount', () => {
	assert.deepEqual(applied.map((d) => `${d.obj.kind}/${d.obj.metadata.name}`), ['Namespace/headroom',
		'Secret/headroomd-agent-key', 'Secret/headroomd-tls', 'Secret/headroom-agent-key',
		'ConfigMap/headroomd-public-key']);
	assert.deepEqual(keysOf(applied, 'Secret', 'headroomd-agent-key'), ['server.key', 'server.pub']);
	assert.deepEqual(keysOf(applied, 'Secret', 'headroom-agent-key'), ['agent.key', 'agent.pub']);
	assert.deepEqual(keysOf(applied, 'ConfigMap', 'headroomd-public-key'), ['server.pub']);
	const tls = applied.find((d) => d.obj.metadata.name === 'headroomd-tls').obj;
	assert.equal(tls.type, 'kubernetes.io/tls');
	assert.match(Buffer.from(tls.data['tls.crt'], 'base64').toString(), /^-----BEGIN CERTIFICATE-----/);
	const docs = bundle(originals());
	const mounted = new Set();
	for (const d of docs) {
		for (const v of d.obj?.spec?.template?.spec?.volumes || []) {
			if (v.secret) mounted.add(`Secret/${v.secret.secretName}`);
			if (v.configMap) mounted.add(`ConfigMap/${v.configMap.name}`);
		}
	}
	for (const d of applied.slice(1)) {
		assert.equal(d.obj.metadata.namespace, 'headroom');
		assert.ok(mounted.has(`${d.obj.kind}/${d.obj.metadata.name}`),
			`secrets.sh makes ${d.obj.kind}/${d.obj.metadata.name}, which no pod mounts`);
	}
});

test("the README's commands name objects that exist", () => {
	const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
	const docs = bundle(originals());
	const has = (kind, name) => docs.some((d) => d.obj.kind === kind && d.obj.metadata.name === name);
	const KINDS = { statefulset: 'StatefulSet', deployment: 'Deployment', svc: 'Service', service: 'Service' };
	let n = 0;
	for (const m of readme.matchAll(/\b(statefulset|deployment|svc|service)\/([a-z0-9-]+)/g)) {
		assert.ok(has(KINDS[m[1]], m[2]), `README.md names ${m[0]}, which no manifest makes`);
		n++;
	}
	for (const m of readme.matchAll(/create secret (?:generic|tls) ([a-z0-9-]+)/g))
		assert.ok(has('Secret', m[1]), `README.md makes Secret ${m[1]}, which no pod mounts`);
	for (const m of readme.matchAll(/exec ([a-z0-9-]+)-(\d+) /g)) {
		assert.ok(has('StatefulSet', m[1]), `README.md execs in ${m[1]}-${m[2]}, of no StatefulSet`);
		n++;
	}
	for (const m of readme.matchAll(/kubectl -n ([a-z0-9-]+)/g))
		assert.equal(m[1], kustomization.namespace);
	assert.ok(n >= 5, `only ${n} object names found in README.md`);
});

test("the README's spec reaches the example server through an allowed target, on agents that carry its labels", () => {
	const readme = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
	const m = /cat >k8s-run\.json <<'EOF'\n([\s\S]*?)\nEOF\n/.exec(readme);
	assert.ok(m, 'no k8s-run.json in README.md');
	const spec = JSON.parse(m[1]);
	const docs = bundle(originals());
	const url = new URL(spec.target.url);
	const [svcName, ns, svc] = url.hostname.split('.');
	assert.equal(svc, 'svc');
	const service = docs.find((d) => d.obj.kind === 'Service' && d.obj.metadata.name === svcName &&
		d.obj.metadata.namespace === ns);
	assert.ok(service, `no Service ${svcName} in namespace ${ns} for ${spec.target.url}`);
	assert.ok(service.obj.spec.ports.some((p) => p.port === Number(url.port)), `Service ${svcName} has no port ${url.port}`);
	const conf = docs.find((d) => d.obj.metadata.name === 'headroomd-config').obj.data['headroomd.conf'];
	assert.ok(conf.split('\n').includes(`allow-target = ${url.hostname}:${url.port}`),
		`headroomd.conf allows no target ${url.hostname}:${url.port}`);
	const agent = docs.find((d) => d.obj.kind === 'Deployment' && d.obj.metadata.name === 'headroom-agent')
		.obj.spec.template.spec.containers[0];
	const labels = Object.fromEntries(agent.args[agent.args.indexOf('--labels') + 1].split(',').map((kv) => kv.split('=')));
	assert.equal(spec.placement.local, 0);
	for (const a of spec.placement.agents)
		for (const [k, v] of Object.entries(a.selector))
			assert.equal(labels[k], v, `the agents do not carry ${k}=${v}`);
	assert.match(readme, new RegExp(`--labels ${Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',')}\\b`),
		'the enrollment in README.md gives other labels than the agents announce');
});

// headroomd --check-config over headroomd.yaml's headroomd.conf, with
// edit(conf) applied: {ok, out}.
function checkConfig(t, edit = (c) => c) {
	assert.ok(bin, 'HEADROOM_BIN (the build\'s bin/) is not set');
	const cm = bundle(originals()).find((d) => d.obj.kind === 'ConfigMap' &&
		d.obj.metadata.name === 'headroomd-config');
	let conf = cm.obj.data['headroomd.conf'];
	// Built without agents (headroom-agent absent), headroomd knows no
	// agent-* options: check the rest.
	if (!fs.existsSync(path.join(bin, 'headroom-agent'))) {
		t.diagnostic('no headroom-agent in HEADROOM_BIN: agent-listen and agent-key not checked');
		conf = conf.replace(/^agent-[a-z-]+ = .*\n/gm, '');
	}
	const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hr-k8s-'));
	try {
		fs.writeFileSync(path.join(tmp, 'headroomd.conf'), edit(conf));
		const out = execFileSync(path.join(bin, 'headroomd'),
			['--config', path.join(tmp, 'headroomd.conf'), '--check-config'], { encoding: 'utf8', stdio: 'pipe' });
		return { ok: true, out };
	} catch (e) {
		return { ok: false, out: `${e.stderr || e.message}` };
	} finally {
		fs.rmSync(tmp, { recursive: true, force: true });
	}
}

test('headroomd accepts the configuration of headroomd.yaml', (t) => {
	const r = checkConfig(t);
	assert.ok(r.ok, `headroomd --check-config refused headroomd.yaml's headroomd.conf: ${r.out}`);
	t.diagnostic(r.out.trim());
});

test('refused: headroomd.conf with a misspelled option', (t) => {
	const r = checkConfig(t, (c) => c.replace('allowed-host = localhost', 'allowed-hosts = localhost'));
	assert.ok(!r.ok && /allowed-hosts/.test(r.out), r.out);
});

// [file, text to replace (exactly once), replacement, what the finding says]
const BROKEN = [
	['agents.yaml', 'readOnlyRootFilesystem: true', 'readOnlyRootFilesytem: true',
		/containers\[0\]\.securityContext\.readOnlyRootFilesytem: .*'"readOnlyRootFilesytem"' does not exist in type 'SecurityContext'/],
	['headroomd.yaml', 'serviceName: headroomd', 'servicename: headroomd',
		/spec\.servicename: .*'"servicename"' does not exist in type 'StatefulSetSpec'/],
	['agents.yaml', 'replicas: 3', 'replicas: "3"', /spec\.replicas: Type 'string' is not assignable to type 'number'/],
	['headroomd.yaml', 'containerPort: 8444', 'containerPort: 8444.5x',
		/ports\[1\]\.containerPort: Type 'string' is not assignable to type 'number'/],
	['headroomd.yaml', 'accessModes: ["ReadWriteOnce"]', 'accessModes: ReadWriteOnce',
		/volumeClaimTemplates\[0\]\.spec\.accessModes: Type 'string' is not assignable to type 'string\[\]'/],
	['agents.yaml', '        - name: agent\n          image', '        - image',
		/containers\[0\]: .*'name' is missing/],
	['agents.yaml', 'replicas: 3', 'replicas: -1', /spec\.replicas: -1 is not an integer 0 to/],
	['agents.yaml', 'imagePullPolicy: IfNotPresent', 'imagePullPolicy: IfNotPresnt',
		/containers\[0\]\.imagePullPolicy: "IfNotPresnt" is not one of Always, IfNotPresent, Never/],
	['mock.yaml', 'containerPort: 8000\n              protocol: TCP', 'containerPort: 8000\n              protocol: TPC',
		/ports\[0\]\.protocol: "TPC" is not one of TCP, UDP, SCTP/],
	['headroomd.yaml', 'path: /api/v1/readyz\n              port: api\n              scheme: HTTPS',
		'path: /api/v1/readyz\n              port: api\n              scheme: HTTP5',
		/readinessProbe\.httpGet\.scheme: "HTTP5" is not one of HTTP, HTTPS/],
	['headroomd.yaml', 'memory: 4Gi', 'memory: 4GB', /resources\.limits\.memory: "4GB" is not a quantity/],
	['headroomd.yaml', 'storage: 20Gi', 'storage: 20gi', /resources\.requests\.storage: "20gi" is not a quantity/],
	['agents.yaml', 'fieldPath: metadata.name', 'fieldPath: metadata.nmae',
		/fieldRef\.fieldPath: "metadata\.nmae" is not a field the downward API offers/],
	['headroomd.yaml', '- name: agents\n              containerPort: 8444', '- name: agent-connections\n              containerPort: 8444',
		/ports\[1\]\.name: "agent-connections" is not a port name/],
	['agents.yaml', '        - name: agent\n          image', '        - name: Agent\n          image',
		/containers\[0\]\.name: "Agent" is not a DNS label/],
	['agents.yaml', 'weight: 100', 'weight: 200', /\.weight: 200 is not an integer 1 to 100/],
	['agents.yaml', 'defaultMode: 0440', 'defaultMode: 01440', /volumes\[0\]\.secret\.defaultMode: 800 is not an integer 0 to 511/],
	['agents.yaml', 'app.kubernetes.io/component: agent', 'app.kubernetes.io/component: load agent',
		/metadata\.labels\.app\.kubernetes\.io\/component: "load agent" is not a label value/],
	['headroomd.yaml', 'kind: StatefulSet', 'kind: Statefulset', /kind: .*no exported member named 'Statefulset'/],
	['mock.yaml', 'apiVersion: apps/v1', 'apiVersion: app/v1', /apiVersion: unknown apiVersion "app\/v1"/],
	['headroomd.yaml', 'spec:\n  type: ClusterIP\n  selector:\n    app.kubernetes.io/name: headroomd',
		'spec:\n  type: ClusterIP\n  selector:\n    app.kubernetes.io/name: headroom-daemon',
		/^spec\.selector: the selector matches no pod template/],
	['headroomd.yaml', 'targetPort: agents', 'targetPort: agent',
		/spec\.ports\[1\]\.targetPort: no container port "agent"/],
	['mock.yaml', 'port: 8000\n      targetPort: http', 'port: 8000\n      targetPort: 8080',
		/spec\.ports\[0\]\.targetPort: no container port 8080/],
	['agents.yaml', '- name: cache\n              mountPath', '- name: caches\n              mountPath',
		/volumeMounts\[2\]\.name: no volume or volume claim template "caches"/],
	['headroomd.yaml', '  volumeClaimTemplates:\n    - metadata:\n        name: data',
		'  volumeClaimTemplates:\n    - metadata:\n        name: datadir',
		/volumeMounts\[0\]\.name: no volume or volume claim template "data"/],
	['agents.yaml', 'matchLabels:\n      app.kubernetes.io/name: headroom-agent',
		'matchLabels:\n      app.kubernetes.io/name: headroom-agents',
		/spec\.selector\.matchLabels: the selector does not match the pod template's labels/],
	['headroomd.yaml', 'serviceName: headroomd', 'serviceName: headroomd-pods',
		/spec\.serviceName: no Service "headroomd-pods"/],
	['agents.yaml', 'secretName: headroom-agent-key', 'secretName: headroom-agent-keys',
		/volumes\[0\]\.secret\.secretName: no Secret "headroom-agent-keys"/],
	['agents.yaml', 'name: headroomd-public-key', 'name: headroomd-pub-key',
		/volumes\[1\]\.configMap\.name: no ConfigMap "headroomd-pub-key"/],
	['headroomd.yaml', 'subPath: headroomd.conf', 'subPath: headroom.conf',
		/subPath: "headroom\.conf" is not a key of ConfigMap "headroomd-config"/],
	['headroomd.yaml', 'path: /api/v1/readyz\n              port: api', 'path: /api/v1/readyz\n              port: https',
		/readinessProbe: port "https" names no port of the container/],
	['agents.yaml', '$(POD_NAME)', '$(POD)', /args: \$\(POD\) names no variable/],
	['agents.yaml', '/etc/headroom/server/server.pub', '/etc/headroom/server/server.key',
		/args --server-key: \/etc\/headroom\/server\/server\.key is no key/],
	['headroomd.yaml', 'tls-key = /etc/headroom/tls/tls.key', 'tls-key = /etc/headroom/tls/key.pem',
		/headroomd\.conf tls-key: \/etc\/headroom\/tls\/key\.pem is no key/],
];

for (const [file, from, to, expected] of BROKEN) {
	const a = from.split('\n');
	const b = to.split('\n');
	const k = a.findIndex((line, i) => line !== b[i]);
	test(`refused: ${file}: ${JSON.stringify(a[k].trim())} -> ${JSON.stringify((b[k] ?? '').trim())}`, () => {
		const texts = originals();
		assert.equal(texts[file].split(from).length, 2, `"${from}" is not in ${file} exactly once`);
		texts[file] = texts[file].replace(from, to);
		const errors = findings(bundle(texts));
		const text = format(errors);
		assert.ok(errors.some((e) => expected.test(`${e.path}: ${e.message}`)),
			`expected a finding like ${expected}, got:\n${text || '(none)'}`);
	});
}

// secrets.sh edited: [text to replace (exactly once), replacement, finding]
const BROKEN_SCRIPT = [
	['create secret generic headroom-agent-key', 'create secret generic headroom-agents-key',
		/secretName: no Secret "headroom-agent-key"/],
	['--from-file=agent.pub=', '--from-file=agent.pem=', /args --key: \/etc\/headroom\/agent\/agent\.pub is no key/],
];

for (const [from, to, expected] of BROKEN_SCRIPT) {
	test(`refused: secrets.sh: ${JSON.stringify(from)} -> ${JSON.stringify(to)}`, () => {
		assert.equal(secretsScript.split(from).length, 2, `"${from}" is not in secrets.sh exactly once`);
		const errors = findings(bundle(originals(), runSecrets(secretsScript.replace(from, to))));
		assert.ok(errors.some((e) => expected.test(`${e.path}: ${e.message}`)),
			`expected a finding like ${expected}, got:\n${format(errors) || '(none)'}`);
	});
}

test('a document that is not YAML is refused', () => {
	assert.throws(() => parseManifests('a: [1, 2\nb: 3\n', 'broken.yaml'), /broken\.yaml: document 0/);
});
