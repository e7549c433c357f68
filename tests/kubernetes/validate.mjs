// validate.mjs - checks Kubernetes manifests offline, without a cluster:
//
// 1. Schema: every object is type-checked, with the TypeScript compiler in
//    strict mode, against the Kubernetes API's types from npm's
//    kubernetes-types (generated from the API's OpenAPI document). Each
//    object becomes `const o: <Kind> = <object literal>`, so an unknown
//    field (a misspelling) is an excess property, a value of the wrong type
//    and a missing required field are type errors, and an apiVersion or
//    kind the API does not have names no type.
// 2. Rules of the API server's validation that the types leave out:
//    allowed values of enumerations (imagePullPolicy, protocol, ...),
//    quantities, integer ranges (ports, modes, weights), DNS names of
//    objects, containers, volumes and ports, label syntax, downward API
//    fields (RULES below).
// 3. References between the objects of one bundle, which no schema sees:
//    a workload's selector and its pod template's labels, a Service's
//    selector and targetPorts and the pods it would reach, a StatefulSet's
//    serviceName, volume mounts and volumes, the ConfigMaps and Secrets a
//    pod names (in the bundle, or in a list of objects made elsewhere),
//    environment variables a container's args expand, named probe ports.
//
// Each finding is {where, path, message}: `where` names the file, the
// document's index and the object (Kind/name), `path` the field
// (spec.template.spec.containers[0].image). No finding: valid.
//
// Also a command: node validate.mjs FILE.yaml... prints the findings and
// exits 1 when there are any.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import YAML from 'yaml';

const here = path.dirname(fileURLToPath(import.meta.url));
const typesDir = path.join(here, 'node_modules', 'kubernetes-types');

// Parses YAML text (several documents) into [{file, index, obj}] as
// Kubernetes reads it, YAML 1.1 (0440 is octal, yes is true); an empty
// document is skipped, a YAML error is thrown naming the file.
export function parseManifests(text, file) {
	const out = [];
	const docs = YAML.parseAllDocuments(text, { prettyErrors: true, version: '1.1' });
	docs.forEach((doc, index) => {
		if (doc.errors.length)
			throw new Error(`${file}: document ${index}: ${doc.errors[0].message}`);
		const obj = doc.toJS({ maxAliasCount: 0 });
		if (obj !== null && obj !== undefined)
			out.push({ file, index, obj });
	});
	return out;
}

export function loadManifests(files) {
	return files.flatMap((f) => parseManifests(fs.readFileSync(f, 'utf8'), f));
}

function where(d) {
	const o = d.obj ?? {};
	const name = o.metadata && o.metadata.name;
	return `${d.file} #${d.index} ${o.kind ?? '?'}/${name ?? '?'}`;
}

// "apps/v1" -> "apps/v1", "v1" -> "core/v1", "networking.k8s.io/v1" ->
// "networking/v1"; null when kubernetes-types has no such module.
function typesModule(apiVersion) {
	if (typeof apiVersion !== 'string' || !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion))
		return null;
	const parts = apiVersion.split('/');
	const version = parts.pop();
	const group = parts.length ? parts[0].replace(/\.k8s\.io$/, '').split('.')[0] : 'core';
	const mod = `${group}/${version}`;
	return fs.existsSync(path.join(typesDir, `${mod}.d.ts`)) ? mod : null;
}

// The JSON path of the innermost object-literal member at pos.
function pathAt(sourceFile, root, pos) {
	const trail = [];
	let node = root;
	for (;;) {
		let next = null;
		node.forEachChild((c) => {
			if (!next && c.getStart(sourceFile) <= pos && pos < c.getEnd())
				next = c;
		});
		if (!next)
			break;
		if (ts.isPropertyAssignment(next))
			trail.push(next.name.text);
		if (ts.isArrayLiteralExpression(node))
			trail.push(`[${node.elements.indexOf(next)}]`);
		node = next;
	}
	return trail.join('.').replace(/\.\[/g, '[');
}

// Schema findings of docs (see the top of the file).
export function schemaErrors(docs) {
	const errors = [];
	const virtual = path.join(here, '__manifests__.ts');
	const lines = [];
	const decls = [];
	docs.forEach((d, i) => {
		const o = d.obj;
		if (typeof o !== 'object' || Array.isArray(o)) {
			errors.push({ where: where(d), path: '', message: 'not an object' });
			return;
		}
		const mod = typesModule(o.apiVersion);
		if (!mod) {
			errors.push({ where: where(d), path: 'apiVersion',
				message: `unknown apiVersion ${JSON.stringify(o.apiVersion)}` });
			return;
		}
		if (typeof o.kind !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(o.kind)) {
			errors.push({ where: where(d), path: 'kind',
				message: `not a kind: ${JSON.stringify(o.kind)}` });
			return;
		}
		lines.push(`import type * as m${i} from "kubernetes-types/${mod}";`);
		decls.push({ i, d, text: `export const o${i}: m${i}.${o.kind} = ${JSON.stringify(o, null, 1)};` });
	});
	const source = lines.concat(decls.map((x) => x.text)).join('\n') + '\n';
	const options = {
		// null is absent, as the API server reads it (kubectl's own output
		// has creationTimestamp: null)
		strict: true, strictNullChecks: false, noEmit: true, target: ts.ScriptTarget.ES2020,
		module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Node10,
		types: [], lib: ['lib.es2020.d.ts'], skipLibCheck: true,
	};
	const host = ts.createCompilerHost(options);
	const getSourceFile = host.getSourceFile.bind(host);
	host.getSourceFile = (name, lang, ...rest) =>
		name === virtual ? ts.createSourceFile(name, source, lang, true)
			: getSourceFile(name, lang, ...rest);
	const fileExists = host.fileExists.bind(host);
	host.fileExists = (name) => name === virtual || fileExists(name);
	const readFile = host.readFile.bind(host);
	host.readFile = (name) => (name === virtual ? source : readFile(name));
	const program = ts.createProgram([virtual], options, host);
	const sf = program.getSourceFile(virtual);
	const stmts = new Map();
	for (const st of sf.statements) {
		if (ts.isVariableStatement(st)) {
			const name = st.declarationList.declarations[0].name.text;
			stmts.set(Number(name.slice(1)), st);
		}
	}
	for (const diag of ts.getPreEmitDiagnostics(program)) {
		const message = ts.flattenDiagnosticMessageText(diag.messageText, ' ')
			.replaceAll(`"${typesDir}/`, '"kubernetes-types/');
		if (diag.file !== sf || diag.start === undefined) {
			errors.push({ where: 'types', path: '', message });
			continue;
		}
		let hit = null;
		for (const { i, d } of decls) {
			const st = stmts.get(i);
			if (st.getStart(sf) <= diag.start && diag.start < st.getEnd())
				hit = { st, d };
		}
		if (!hit) {
			// on an import line, "import type * as m<index> ..."
			const line = source.slice(source.lastIndexOf('\n', diag.start) + 1);
			const m = /^import type \* as m(\d+) /.exec(line);
			const d = m ? docs[Number(m[1])] : null;
			errors.push({ where: d ? where(d) : 'types', path: '', message });
			continue;
		}
		const init = hit.st.declarationList.declarations[0];
		let p = pathAt(sf, init.initializer, diag.start);
		if (init.type && diag.start < init.initializer.getStart(sf)) {
			p = 'kind';
		}
		errors.push({ where: where(hit.d), path: p, message });
	}
	return errors;
}

const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

function podTemplates(docs) {
	const out = [];
	for (const d of docs) {
		const o = d.obj;
		if (WORKLOADS.has(o.kind) && o.spec && o.spec.template)
			out.push({ d, ns: o.metadata?.namespace, tmpl: o.spec.template, base: 'spec.template' });
		else if (o.kind === 'Pod')
			out.push({ d, ns: o.metadata?.namespace, tmpl: o, base: '' });
	}
	return out;
}

function matches(selector, labels) {
	const keys = Object.keys(selector || {});
	return keys.length > 0 && keys.every((k) => labels && labels[k] === selector[k]);
}

function containersOf(spec) {
	return [...(spec.initContainers || []).map((c, i) => ['initContainers', i, c]),
		...(spec.containers || []).map((c, i) => ['containers', i, c])];
}

// Reference findings of docs, one bundle. external: {ConfigMap: [names],
// Secret: [names]} made outside the bundle (same namespace).
export function referenceErrors(docs, external = {}) {
	const errors = [];
	const err = (d, p, message) => errors.push({ where: where(d), path: p, message });
	const named = (kind, ns) => new Map(docs
		.filter((d) => d.obj.kind === kind && d.obj.metadata?.namespace === ns)
		.map((d) => [d.obj.metadata?.name, d.obj]));
	const templates = podTemplates(docs);

	for (const d of docs) {
		const o = d.obj;
		if (WORKLOADS.has(o.kind) && o.kind !== 'Job' && o.spec) {
			const sel = o.spec.selector?.matchLabels;
			if (!matches(sel, o.spec.template?.metadata?.labels))
				err(d, 'spec.selector.matchLabels',
					"the selector does not match the pod template's labels");
		}
		if (o.kind === 'StatefulSet' && o.spec && typeof o.spec.serviceName === 'string') {
			const services = named('Service', o.metadata?.namespace);
			if (!services.has(o.spec.serviceName))
				err(d, 'spec.serviceName', `no Service ${JSON.stringify(o.spec.serviceName)} in the bundle`);
		}
		if (o.kind === 'Service' && o.spec && o.spec.selector) {
			const reached = templates.filter((t) =>
				t.ns === o.metadata?.namespace && matches(o.spec.selector, t.tmpl.metadata?.labels));
			if (!reached.length) {
				err(d, 'spec.selector', 'the selector matches no pod template in the bundle');
				continue;
			}
			(o.spec.ports || []).forEach((p, i) => {
				const target = p.targetPort ?? p.port;
				const ok = reached.some((t) => containersOf(t.tmpl.spec || {}).some(([, , c]) =>
					(c.ports || []).some((cp) =>
						typeof target === 'string' ? cp.name === target : cp.containerPort === target)));
				if (!ok)
					err(d, `spec.ports[${i}].targetPort`,
						`no container port ${JSON.stringify(target)} in the pods the selector matches`);
			});
		}
	}

	for (const { d, ns, tmpl, base } of templates) {
		const at = (p) => (base ? `${base}.${p}` : p);
		const spec = tmpl.spec || {};
		const volumes = new Map((spec.volumes || []).map((v) => [v.name, v]));
		const claims = new Set(d.obj.kind === 'StatefulSet'
			? (d.obj.spec.volumeClaimTemplates || []).map((c) => c.metadata?.name) : []);
		const mounted = new Set();
		const configMaps = named('ConfigMap', ns);
		const secrets = named('Secret', ns);
		const known = (kind, map, name) => map.has(name) || (external[kind] || []).includes(name);
		const keyIn = (obj, key) => !obj || key in (obj.data || {}) || key in (obj.binaryData || {}) ||
			key in (obj.stringData || {});

		containersOf(spec).forEach(([list, i, c]) => {
			const cp = at(`spec.${list}[${i}]`);
			(c.volumeMounts || []).forEach((m, j) => {
				mounted.add(m.name);
				if (!volumes.has(m.name) && !claims.has(m.name))
					err(d, `${cp}.volumeMounts[${j}].name`,
						`no volume or volume claim template ${JSON.stringify(m.name)}`);
				const v = volumes.get(m.name);
				if (v && m.subPath && (v.configMap || v.secret)) {
					const obj = v.configMap ? configMaps.get(v.configMap.name)
						: secrets.get(v.secret.secretName);
					if (!keyIn(obj, m.subPath))
						err(d, `${cp}.volumeMounts[${j}].subPath`,
							`${JSON.stringify(m.subPath)} is not a key of ${v.configMap ? 'ConfigMap' : 'Secret'} ${JSON.stringify(v.configMap ? v.configMap.name : v.secret.secretName)}`);
				}
			});
			const env = new Set((c.env || []).map((e) => e.name));
			[...(c.command || []), ...(c.args || [])].forEach((a) => {
				for (const m of String(a).matchAll(/(?<!\$)\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
					if (!env.has(m[1]))
						err(d, `${cp}.args`, `$(${m[1]}) names no variable of the container's env`);
				}
			});
			(c.env || []).forEach((e, j) => {
				const r = e.valueFrom || {};
				if (r.configMapKeyRef && !r.configMapKeyRef.optional) {
					if (!known('ConfigMap', configMaps, r.configMapKeyRef.name))
						err(d, `${cp}.env[${j}].valueFrom.configMapKeyRef.name`, `no ConfigMap ${JSON.stringify(r.configMapKeyRef.name)}`);
					else if (!keyIn(configMaps.get(r.configMapKeyRef.name), r.configMapKeyRef.key))
						err(d, `${cp}.env[${j}].valueFrom.configMapKeyRef.key`, `no key ${JSON.stringify(r.configMapKeyRef.key)}`);
				}
				if (r.secretKeyRef && !r.secretKeyRef.optional) {
					if (!known('Secret', secrets, r.secretKeyRef.name))
						err(d, `${cp}.env[${j}].valueFrom.secretKeyRef.name`, `no Secret ${JSON.stringify(r.secretKeyRef.name)}`);
					else if (!keyIn(secrets.get(r.secretKeyRef.name), r.secretKeyRef.key))
						err(d, `${cp}.env[${j}].valueFrom.secretKeyRef.key`, `no key ${JSON.stringify(r.secretKeyRef.key)}`);
				}
			});
			(c.envFrom || []).forEach((e, j) => {
				if (e.configMapRef && !e.configMapRef.optional && !known('ConfigMap', configMaps, e.configMapRef.name))
					err(d, `${cp}.envFrom[${j}].configMapRef.name`, `no ConfigMap ${JSON.stringify(e.configMapRef.name)}`);
				if (e.secretRef && !e.secretRef.optional && !known('Secret', secrets, e.secretRef.name))
					err(d, `${cp}.envFrom[${j}].secretRef.name`, `no Secret ${JSON.stringify(e.secretRef.name)}`);
			});
			const portNames = new Set((c.ports || []).map((p) => p.name).filter(Boolean));
			for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
				const pr = c[probe];
				const port = pr && (pr.httpGet || pr.tcpSocket || pr.grpc)?.port;
				if (typeof port === 'string' && !portNames.has(port))
					err(d, `${cp}.${probe}`, `port ${JSON.stringify(port)} names no port of the container`);
			}
		});

		(spec.volumes || []).forEach((v, i) => {
			const vp = at(`spec.volumes[${i}]`);
			if (!mounted.has(v.name))
				err(d, `${vp}.name`, `volume ${JSON.stringify(v.name)} is mounted by no container`);
			if (v.configMap && !v.configMap.optional) {
				if (!known('ConfigMap', configMaps, v.configMap.name))
					err(d, `${vp}.configMap.name`, `no ConfigMap ${JSON.stringify(v.configMap.name)}`);
			}
			if (v.secret && !v.secret.optional) {
				if (!known('Secret', secrets, v.secret.secretName))
					err(d, `${vp}.secret.secretName`, `no Secret ${JSON.stringify(v.secret.secretName)}`);
			}
		});
		for (const name of claims) {
			if (!mounted.has(name))
				err(d, 'spec.volumeClaimTemplates', `volume claim template ${JSON.stringify(name)} is mounted by no container`);
		}
	}
	return errors;
}

// Rules of the API server's validation that the types cannot carry
// (their enumerations are plain strings, their integers plain numbers):
// [path pattern, check, what is expected]. A path is normalised with []
// for any index (spec.template.spec.containers[].ports[].protocol).
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$/;
const oneOf = (...values) => [(v) => values.includes(v), `one of ${values.join(', ')}`];
const int = (lo, hi) => [(v) => Number.isInteger(v) && v >= lo && v <= hi, `an integer ${lo} to ${hi}`];
const RULES = [
	[/^metadata\.name$/, [(v) => DNS_SUBDOMAIN.test(v), 'a DNS subdomain (lower case, digits, - and .)']],
	[/(containers|initContainers)\[\]\.name$/, [(v) => DNS_LABEL.test(v), 'a DNS label (lower case, digits, -; at most 63)']],
	[/volumes\[\]\.name$|volumeClaimTemplates\[\]\.metadata\.name$/, [(v) => DNS_LABEL.test(v), 'a DNS label']],
	[/^spec\.ports\[\]\.name$/, [(v) => DNS_LABEL.test(v), 'a DNS label']],
	[/(containers|initContainers)\[\]\.ports\[\]\.name$/,
		[(v) => /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/.test(v), 'a port name: at most 15 of a-z 0-9 -, a letter among them']],
	[/(containers|initContainers)\[\]\.imagePullPolicy$/, oneOf('Always', 'IfNotPresent', 'Never')],
	[/ports\[\]\.protocol$/, oneOf('TCP', 'UDP', 'SCTP')],
	[/httpGet\.scheme$/, oneOf('HTTP', 'HTTPS')],
	[/accessModes\[\]$/, oneOf('ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod')],
	[/seccompProfile\.type$/, oneOf('RuntimeDefault', 'Unconfined', 'Localhost')],
	[/(^|template\.)spec\.restartPolicy$/, oneOf('Always', 'OnFailure', 'Never')],
	[/^spec\.strategy\.type$/, oneOf('RollingUpdate', 'Recreate')],
	[/^spec\.updateStrategy\.type$/, oneOf('RollingUpdate', 'OnDelete')],
	[/^spec\.podManagementPolicy$/, oneOf('OrderedReady', 'Parallel')],
	[/volumeMode$/, oneOf('Filesystem', 'Block')],
	[/dnsPolicy$/, oneOf('ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None')],
	[/terminationMessagePolicy$/, oneOf('File', 'FallbackToLogsOnError')],
	[/matchExpressions\[\]\.operator$/, oneOf('In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt')],
	[/tolerations\[\]\.operator$/, oneOf('Exists', 'Equal')],
	[/tolerations\[\]\.effect$/, oneOf('NoSchedule', 'PreferNoSchedule', 'NoExecute')],
	[/fieldRef\.fieldPath$/, [(v) => /^(metadata\.(name|namespace|uid)|metadata\.(labels|annotations)(\['[^']+'\])?|spec\.(nodeName|serviceAccountName)|status\.(hostIP|hostIPs|podIP|podIPs))$/.test(v),
		'a field the downward API offers (metadata.name, metadata.namespace, status.podIP, ...)']],
	[/\.(limits|requests)\.[^.]+$|sizeLimit$/, [(v) => typeof v === 'string' && QUANTITY.test(v), 'a quantity such as "2", "500m", "1Gi"']],
	[/(containerPort|hostPort)$|^spec\.ports\[\]\.(port|nodePort)$/, int(1, 65535)],
	[/targetPort$|httpGet\.port$|tcpSocket\.port$/, [(v) => (typeof v === 'string' && v !== '') ||
		(Number.isInteger(v) && v >= 1 && v <= 65535), 'a port name or an integer 1 to 65535']],
	[/replicas$|revisionHistoryLimit$|minReadySeconds$|terminationGracePeriodSeconds$/, int(0, 2 ** 31 - 1)],
	[/(initialDelaySeconds|periodSeconds|timeoutSeconds|successThreshold|failureThreshold)$/, int(0, 2 ** 31 - 1)],
	[/defaultMode$|items\[\]\.mode$/, int(0, 0o777)],
	[/run(AsUser|AsGroup)$|fsGroup$/, int(0, 2 ** 31 - 1)],
	[/preferredDuringSchedulingIgnoredDuringExecution\[\]\.weight$/, int(1, 100)],
];

// Walks obj, calling visit(normalisedPath, path, value) on each leaf and
// each array element.
function walk(obj, visit, p = '', np = '') {
	if (Array.isArray(obj)) {
		obj.forEach((v, i) => {
			visit(`${np}[]`, `${p}[${i}]`, v);
			walk(v, visit, `${p}[${i}]`, `${np}[]`);
		});
	} else if (obj && typeof obj === 'object') {
		for (const [k, v] of Object.entries(obj)) {
			const kp = p ? `${p}.${k}` : k;
			const knp = np ? `${np}.${k}` : k;
			if (!Array.isArray(v))
				visit(knp, kp, v);
			walk(v, visit, kp, knp);
		}
	}
}

function labelErrors(labels, p, err) {
	for (const [k, v] of Object.entries(labels || {})) {
		const parts = k.split('/');
		const name = parts.pop();
		if (parts.length > 1 || (parts.length && !DNS_SUBDOMAIN.test(parts[0])) ||
			!/^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name))
			err(`${p}.${k}`, 'not a label key ([prefix/]name, the name at most 63 of A-Z a-z 0-9 - _ .)');
		if (typeof v === 'string' && !/^((?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/.test(v))
			err(`${p}.${k}`, `${JSON.stringify(v)} is not a label value (at most 63 of A-Z a-z 0-9 - _ ., alphanumeric at the ends)`);
	}
}

// Rule findings of docs (RULES, label syntax).
export function ruleErrors(docs) {
	const errors = [];
	for (const d of docs) {
		if (!d.obj || typeof d.obj !== 'object')
			continue;
		const err = (p, message) => errors.push({ where: where(d), path: p, message });
		walk(d.obj, (np, p, v) => {
			if (v !== null && typeof v === 'object')
				return;
			for (const [re, [ok, expected]] of RULES) {
				if (re.test(np) && !ok(v)) {
					err(p, `${JSON.stringify(v)} is not ${expected}`);
					break;
				}
			}
		});
		walk(d.obj, (np, p, v) => {
			if (v && typeof v === 'object' && !Array.isArray(v) &&
				/(^|\.)metadata\.labels$|matchLabels$/.test(np))
				labelErrors(v, p, err);
		});
		if (d.obj.kind === 'Service' && d.obj.spec && typeof d.obj.spec.selector === 'object')
			labelErrors(d.obj.spec.selector, 'spec.selector', err);
	}
	return errors;
}

export function format(errors) {
	return errors.map((e) => `${e.where}: ${e.path ? e.path + ': ' : ''}${e.message}`).join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const docs = loadManifests(process.argv.slice(2));
	const errors = [...schemaErrors(docs), ...ruleErrors(docs), ...referenceErrors(docs)];
	if (errors.length) {
		console.error(format(errors));
		process.exit(1);
	}
	console.log(`${docs.length} objects valid`);
}
