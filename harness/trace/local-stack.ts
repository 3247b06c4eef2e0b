// Runs the trace stack's pods from a dist/ chart as local processes with the real Jaeger,
// Collector and HotROD binaries: each Deployment's container, with its args, environment and
// ConfigMap exactly as synthesized. The one change is `localize`: cluster addresses (Service DNS
// names, 0.0.0.0 listeners, mounted files) become local ones. Shared by `npm run tracing:up` and
// the trace tests.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { awaitHealthy, type LoggedProcess, spawnLogged } from '../process/logged.ts';
import { freePort } from '../process/ports.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The binaries scripts/binaries.sh builds for the trace stack. */
export interface TracingBinaries {
  readonly jaeger: string;
  readonly otelcol: string;
  readonly hotrod: string;
  /** For the production query pod's OIDC sidecar: built only for a stack that has one. */
  readonly oauth2Proxy?: string;
}

/** Builds (once, cached) and locates binaries or groups of scripts/binaries.sh: name → path. */
export function builtBinaries(...names: string[]): Record<string, string> {
  const out = execFileSync('bash', [join(ROOT, 'scripts/binaries.sh'), ...names], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string]),
  );
}

/** Builds (once, cached) and locates the trace stack's binaries. */
export function tracingBinaries(): TracingBinaries {
  const paths = builtBinaries('tracing');
  return { jaeger: paths.jaeger, otelcol: paths.otelcol, hotrod: paths.hotrod };
}

/**
 * Replaces cluster addresses by local ones in a configuration document, an argument or an
 * environment value. `addresses` maps `host:port` (a listener such as `0.0.0.0:4317`, or a Service
 * such as `jaeger.tracing.svc:4317`) or an absolute file path to its local counterpart. A key
 * matches whole: `jaeger.tracing.svc:4317` does not match inside `jaeger.tracing.svc:43170`, nor
 * `/etc/a` inside `/etc/ab`. Objects of the form `{ host, port }` (the Collector's Prometheus
 * reader) are matched as `host:port`. Nothing else changes.
 */
export function localize<T>(value: T, addresses: Readonly<Record<string, string>>): T {
  const keys = Object.keys(addresses).sort((a, b) => b.length - a.length);
  if (keys.length === 0) return value;
  const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(
    `(?<![A-Za-z0-9.-])(${keys.map(escapeRegExp).join('|')})(?![A-Za-z0-9_-]|\\.[A-Za-z0-9])`,
    'g',
  );
  const visit = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(pattern, (key) => addresses[key]);
    if (Array.isArray(v)) return v.map(visit);
    if (v !== null && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o.host === 'string' && typeof o.port === 'number' && `${o.host}:${o.port}` in addresses) {
        const [host, port] = splitHostPort(addresses[`${o.host}:${o.port}`]);
        return { ...o, host, port };
      }
      return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, visit(x)]));
    }
    return v;
  };
  return visit(value) as T;
}

function splitHostPort(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), Number(address.slice(i + 1))];
}

type Manifest = Record<string, any>;

/** The manifests of a dist/ trace stack (`tracing-dev`: dist/tracing-dev/tracing-dev.yaml), or of any YAML text. */
export function chartManifests(chartOrYaml: string): Manifest[] {
  const text = chartOrYaml.includes('\n')
    ? chartOrYaml
    : readFileSync(join(ROOT, 'dist', chartOrYaml, `${chartOrYaml}.yaml`), 'utf8');
  return parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter(Boolean);
}

/**
 * One container of a chart's Deployment, resolved for running locally: the first container is
 * named as its Deployment, a sidecar `<deployment>-<container>`. All of a pod's containers share its
 * ports, as they share a network namespace.
 */
export interface LocalPod {
  readonly name: string;
  readonly image: string;
  /** Container port name → the local port it listens on. */
  readonly ports: Readonly<Record<string, number>>;
  /** Ports on the pod's loopback that no container port names (Jaeger's UI behind its OIDC sidecar) → local port. */
  readonly loopback: Readonly<Record<number, number>>;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** The configuration file, localized, when the pod has one. */
  readonly config?: { readonly path: string; readonly document: unknown };
}

/** Values for the Secrets a chart references: secret name → key → value. */
export type SecretValues = Readonly<Record<string, Readonly<Record<string, string>>>>;

export interface PlanOptions {
  /** Where localized configs and mounted Secrets are written. */
  readonly dir: string;
  readonly secrets?: SecretValues;
  /** Local ports to prefer for `<deployment>/<port name>` (used when free). */
  readonly preferredPorts?: Readonly<Record<string, number>>;
  /** Extra addresses every pod sees (a Service outside the chart, run by the caller). */
  readonly extraAddresses?: Readonly<Record<string, string>>;
}

/**
 * Every Deployment of `manifests` as a local process plan: a free local port per container port,
 * each Service's DNS names mapped to its pod's local ports, listeners moved to 127.0.0.1, mounted
 * ConfigMaps and Secrets written under `dir`.
 */
async function planPods(manifests: Manifest[], options: PlanOptions): Promise<LocalPod[]> {
  const deployments = manifests.filter((m) => m.kind === 'Deployment');
  const configMaps = new Map(manifests.filter((m) => m.kind === 'ConfigMap').map((m) => [m.metadata.name, m]));
  const taken = new Set<number>();
  const localPort = async (key: string): Promise<number> => {
    const preferred = options.preferredPorts?.[key];
    if (preferred !== undefined && !taken.has(preferred) && (await isFree(preferred))) {
      taken.add(preferred);
      return preferred;
    }
    let port = await freePort();
    while (taken.has(port)) port = await freePort();
    taken.add(port);
    return port;
  };

  // Local ports of every container port, by deployment.
  const ports = new Map<string, Record<string, { container: number; local: number }>>();
  for (const d of deployments) {
    const byName: Record<string, { container: number; local: number }> = {};
    for (const c of d.spec.template.spec.containers) {
      for (const p of c.ports ?? [])
        byName[p.name] = { container: p.containerPort, local: await localPort(`${d.metadata.name}/${p.name}`) };
    }
    ports.set(d.metadata.name, byName);
  }
  // Services: <name>.<namespace>.svc[.cluster.local]:<port> → the selected pod's local port.
  const services: Record<string, string> = {};
  for (const s of manifests.filter((m) => m.kind === 'Service')) {
    const target = deployments.find((d) =>
      Object.entries(s.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
    );
    if (!target) continue;
    const ns = s.metadata.namespace;
    for (const p of s.spec.ports) {
      const local = ports.get(target.metadata.name)![p.targetPort ?? p.name];
      if (!local) continue;
      for (const host of [
        `${s.metadata.name}.${ns}.svc`,
        `${s.metadata.name}.${ns}.svc.cluster.local`,
        `${s.metadata.name}.${ns}`,
        s.metadata.name,
      ]) {
        services[`${host}:${p.port}`] = `127.0.0.1:${local.local}`;
      }
    }
  }

  const pods: LocalPod[] = [];
  for (const d of deployments) {
    const spec = d.spec.template.spec;
    const own = ports.get(d.metadata.name)!;
    const addresses: Record<string, string> = { ...services, ...options.extraAddresses };
    // The pod's own listeners, on every interface or loopback (behind a sidecar): here, loopback.
    for (const p of Object.values(own)) {
      addresses[`0.0.0.0:${p.container}`] = `127.0.0.1:${p.local}`;
      addresses[`127.0.0.1:${p.container}`] = `127.0.0.1:${p.local}`;
    }
    // Listeners on the pod's loopback that no container port names (Jaeger's UI behind its OIDC
    // sidecar), as its configuration files declare them: a free local port each, so that two
    // stacks never share one. (Loopback URLs in arguments are not listeners: an issuer on this host.)
    const podText = JSON.stringify(podConfigs(spec, configMaps));
    const loopback: Record<number, number> = {};
    for (const [address, port] of podText.matchAll(/\b127\.0\.0\.1:(\d+)\b/g)) {
      if (addresses[address]) continue;
      loopback[Number(port)] = await localPort(`${d.metadata.name}/${address}`);
      addresses[address] = `127.0.0.1:${loopback[Number(port)]}`;
    }
    for (const [index, container] of spec.containers.entries())
      pods.push(planContainer(d, container, index, own, loopback, addresses, configMaps, options));
  }
  return pods;
}

/**
 * The container of CronJob `name` of `manifests`, resolved for one local run, as
 * `kubectl create job --from=cronjob/<name>` would run it: its Secrets written under the plan's dir,
 * addresses outside the chart from `extraAddresses`.
 */
export function planCronJob(manifests: Manifest[], name: string, options: PlanOptions): LocalPod {
  const cronJob = manifests.find((m) => m.kind === 'CronJob' && m.metadata.name === name);
  if (!cronJob) throw new Error(`no CronJob '${name}' in the chart`);
  const pod = { metadata: cronJob.metadata, spec: { template: cronJob.spec.jobTemplate.spec.template } };
  const configMaps = new Map(manifests.filter((m) => m.kind === 'ConfigMap').map((m) => [m.metadata.name, m]));
  const [container] = pod.spec.template.spec.containers;
  return planContainer(pod, container, 0, {}, {}, { ...options.extraAddresses }, configMaps, options);
}

/** The ConfigMaps' data a pod mounts. */
function podConfigs(spec: Manifest, configMaps: Map<string, Manifest>): unknown[] {
  return (spec.volumes ?? [])
    .filter((v: Manifest) => v.configMap)
    .map((v: Manifest) => configMaps.get(v.configMap.name)?.data);
}

/** One container of Deployment (or Job template) `d`, with its pod's `addresses`, mounts written under the plan's dir. */
function planContainer(
  d: Manifest,
  container: Manifest,
  index: number,
  own: Record<string, { container: number; local: number }>,
  loopback: Readonly<Record<number, number>>,
  podAddresses: Readonly<Record<string, string>>,
  configMaps: Map<string, Manifest>,
  options: PlanOptions,
): LocalPod {
  const spec = d.spec.template.spec;
  const name = index === 0 ? d.metadata.name : `${d.metadata.name}-${container.name}`;
  const addresses: Record<string, string> = { ...podAddresses };
  // Volumes: ConfigMaps and Secrets as files under dir/<pod>/<volume>.
  const podDir = join(options.dir, name);
  let configFile: { path: string; mountPath: string; key: string } | undefined;
  for (const mount of container.volumeMounts ?? []) {
    const volume = spec.volumes.find((v: Manifest) => v.name === mount.name);
    const local = join(podDir, mount.name);
    if (volume.configMap) {
      const data = configMaps.get(volume.configMap.name)?.data ?? {};
      for (const key of Object.keys(data))
        configFile = { path: join(local, key), mountPath: `${mount.mountPath}/${key}`, key };
    } else if (volume.secret) {
      const values = options.secrets?.[volume.secret.secretName];
      if (!values) throw new Error(`${name} mounts Secret '${volume.secret.secretName}': pass its keys in secrets`);
      mkdirSync(local, { recursive: true, mode: 0o700 });
      addresses[mount.mountPath] = local;
      const items: { key: string; path: string }[] =
        volume.secret.items ?? Object.keys(values).map((k) => ({ key: k, path: k }));
      for (const { key, path } of items) {
        // As the kubelet does: an optional volume's missing key is no file, not an error.
        if (values[key] === undefined && volume.secret.optional) continue;
        if (values[key] === undefined)
          throw new Error(`${name} mounts key '${key}' of Secret '${volume.secret.secretName}': pass it in secrets`);
        writeFileSync(join(local, path), values[key], { mode: 0o600 });
        addresses[`${mount.mountPath}/${path}`] = join(local, path);
      }
    } else if (volume.emptyDir || volume.persistentVolumeClaim) {
      mkdirSync(local, { recursive: true });
      addresses[mount.mountPath] = local;
    }
  }
  const env: Record<string, string> = {};
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = localize(e.value, addresses);
    else if (e.valueFrom?.secretKeyRef) {
      const { name: secret, key } = e.valueFrom.secretKeyRef;
      const value = options.secrets?.[secret]?.[key];
      if (value === undefined && e.valueFrom.secretKeyRef.optional) continue;
      if (value === undefined)
        throw new Error(`${name} reads key '${key}' of Secret '${secret}' into ${e.name}: pass it in secrets`);
      env[e.name] = value;
    }
  }
  let config: LocalPod['config'];
  if (configFile) {
    const cm = configMaps.get(spec.volumes.find((v: Manifest) => v.configMap)!.configMap.name)!;
    const document = localize(parseAllDocuments(cm.data[configFile.key])[0].toJS(), addresses);
    mkdirSync(join(configFile.path, '..'), { recursive: true });
    writeFileSync(configFile.path, stringify(document));
    addresses[configFile.mountPath] = configFile.path;
    config = { path: configFile.path, document };
  }
  return {
    name,
    image: container.image,
    ports: Object.fromEntries(Object.entries(own).map(([n, p]) => [n, p.local])),
    loopback,
    args: localize(container.args ?? [], addresses),
    env,
    ...(config ? { config } : {}),
  };
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** The binary and extra arguments that run `pod`'s image locally. */
function localCommand(pod: LocalPod, binaries: TracingBinaries): { command: string; args: string[] } {
  const image = pod.image.split(':')[0];
  if (image.endsWith('/jaeger')) return { command: binaries.jaeger, args: [...pod.args] };
  if (image.includes('opentelemetry-collector')) return { command: binaries.otelcol, args: [...pod.args] };
  if (image.endsWith('/oauth2-proxy')) {
    if (!binaries.oauth2Proxy) throw new Error(`pod ${pod.name} runs oauth2-proxy: pass its binary in binaries`);
    return { command: binaries.oauth2Proxy, args: [...pod.args] };
  }
  if (image.endsWith('/example-hotrod')) {
    // HotROD's four services listen on fixed ports unless told: the local ones.
    const flag = (service: string) => `--${service}-service-port=${pod.ports[service]}`;
    return {
      command: binaries.hotrod,
      args: [...pod.args, flag('frontend'), flag('customer'), flag('driver'), flag('route')],
    };
  }
  throw new Error(`no local binary for image ${pod.image} (pod ${pod.name})`);
}

/** A pod running as a local process; its output goes to `logFile`. */
export interface RunningPod extends LoggedProcess {
  readonly pod: LocalPod;
}

/** Starts `pod`, its output in `<logDir>/<pod>.log`; `detached` leaves it running after this process exits (`tracing:up`). */
export function startPod(
  pod: LocalPod,
  binaries: TracingBinaries,
  options: { logDir: string; detached?: boolean },
): RunningPod {
  const { command, args } = localCommand(pod, binaries);
  const running = spawnLogged(pod.name, command, args, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...pod.env },
    logFile: join(options.logDir, `${pod.name}.log`),
    outlive: options.detached,
  });
  return { ...running, pod };
}

/** The URL that says `pod` is up: oauth2-proxy's ping, its health port, or HotROD's frontend. */
export function healthUrl(pod: LocalPod): string {
  const ping = pod.args.find((a) => a.startsWith('--ping-path='));
  if (ping) return `http://127.0.0.1:${pod.ports.query}${ping.slice('--ping-path='.length)}`;
  if (pod.ports.health !== undefined) {
    const jaeger = pod.image.split(':')[0].endsWith('/jaeger');
    return `http://127.0.0.1:${pod.ports.health}${jaeger ? '/status' : '/'}`;
  }
  return `http://127.0.0.1:${pod.ports.frontend}/`;
}

/** A chart's pods running locally. */
export interface LocalStack {
  readonly pods: readonly LocalPod[];
  readonly running: readonly RunningPod[];
  /** Local port of `<pod>`'s container port `name`. */
  port(pod: string, name: string): number;
  url(pod: string, name: string): string;
  /** `http://127.0.0.1:<local port>` of a listener on `<pod>`'s loopback, such as Jaeger's UI behind oauth2-proxy: what the pod's own containers reach. */
  loopbackUrl(pod: string, port: number): string;
  stop(): Promise<void>;
}

/** The local ports of the otel-collector pod's OTLP receivers, by protocol. */
export function collectorOtlpPorts(stack: LocalStack): { http: number; grpc: number } {
  return { http: stack.port('otel-collector', 'otlp-http'), grpc: stack.port('otel-collector', 'otlp-grpc') };
}

export interface StackOptions extends PlanOptions {
  /** Pods started first, in this order (backends before what sends to them); the rest follow. */
  readonly order?: readonly string[];
  /** Start only these pods. @default every Deployment */
  readonly only?: readonly string[];
  /** @default `<dir>/logs` */
  readonly logDir?: string;
  /** Leave the processes running after this one exits (`tracing:up`). */
  readonly detached?: boolean;
}

/**
 * Starts the Deployments of `manifests` one at a time, each once the one before is healthy; on a
 * failure, stops those already started and throws with the failing pod's log tail.
 */
export async function startLocalStack(manifests: Manifest[], options: StackOptions): Promise<LocalStack> {
  const planned = await planPods(manifests, options);
  const pods = options.only ? planned.filter((p) => options.only!.includes(p.name)) : planned;
  const order = options.order ?? [];
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const binaries = {
    ...tracingBinaries(),
    ...(pods.some((p) => p.image.split(':')[0].endsWith('/oauth2-proxy'))
      ? { oauth2Proxy: builtBinaries('oauth2-proxy')['oauth2-proxy'] }
      : {}),
  };
  const running: RunningPod[] = [];
  const stack: LocalStack = {
    pods,
    running,
    port(pod, name) {
      const found = pods.find((p) => p.name === pod);
      if (!found || found.ports[name] === undefined)
        throw new Error(
          `no port '${name}' on pod '${pod}' (pods: ${pods.map((p) => `${p.name}[${Object.keys(p.ports)}]`).join(', ')})`,
        );
      return found.ports[name];
    },
    url(pod, name) {
      return `http://127.0.0.1:${stack.port(pod, name)}`;
    },
    loopbackUrl(pod, port) {
      const local = pods.find((p) => p.name === pod)?.loopback[port];
      if (local === undefined) throw new Error(`no listener on 127.0.0.1:${port} in pod '${pod}'`);
      return `http://127.0.0.1:${local}`;
    },
    async stop() {
      await Promise.all(running.map((r) => r.stop()));
    },
  };
  try {
    for (const pod of [...pods].sort((a, b) => rank(a.name) - rank(b.name))) {
      const r = startPod(pod, binaries, {
        logDir: options.logDir ?? join(options.dir, 'logs'),
        detached: options.detached,
      });
      running.push(r);
      await awaitHealthy(r, healthUrl(pod));
    }
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return stack;
}
