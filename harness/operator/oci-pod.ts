// One container of a pod spec run by a real OCI runtime (runc), the way a kubelet would set it up:
// an OCI bundle unpacked from the image (umoci), its config.json edited from the pod spec (user,
// groups, read-only root, capabilities, no_new_privileges, env, memory limit and CPU shares as cgroup
// settings, emptyDir volumes as tmpfs, the ServiceAccount volume), in a network namespace of its own
// joined to the host by a veth pair, so the pod has an IP address the API server can dial.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * runc, the OCI runtime containerd runs by default. (crun 1.8, Debian bookworm's, refuses this
 * machine's hybrid cgroup layout, v1 controllers plus a v2 `unified` hierarchy: "cgroups in hybrid
 * mode not supported"; OCI_RUNTIME=crun picks it where cgroups are all v1 or all v2.)
 */
export const RUNTIME = process.env.OCI_RUNTIME ?? 'runc';

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Kubernetes quantities as the kubelet converts them: memory to bytes, CPU to millicores. */
export function bytes(quantity: string): number {
  const m = /^([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity);
  if (!m) throw new Error(`unsupported memory quantity ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2] ?? ''] ?? 1;
  return Math.round(Number(m[1]) * unit);
}
export function millicores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) : Math.round(Number(quantity) * 1000);
}

/**
 * A network namespace with a veth pair: the pod's IP is `podIP`, the host side `hostIP`. The
 * API server's advertised address (`apiServer`, the `kubernetes` EndpointSlice's address, which its
 * certificate names) is reached through the veth by a DNAT rule in the namespace, doing kube-proxy's
 * part; nothing else is routed out of it.
 */
export class PodNetwork {
  readonly name: string;
  readonly path: string;
  readonly hostIP: string;
  readonly podIP: string;
  private readonly hostIf: string;

  constructor(id: number, apiServer: { ip: string; port: number }) {
    const octet = 1 + (id % 250);
    this.name = `wsimg-${id}`;
    this.path = `/var/run/netns/${this.name}`;
    this.hostIf = `wsh${id % 100000}`;
    const podIf = `wsp${id % 100000}`;
    this.hostIP = `10.213.${octet}.1`;
    this.podIP = `10.213.${octet}.2`;
    this.close();
    run('ip', ['netns', 'add', this.name]);
    run('ip', ['link', 'add', this.hostIf, 'type', 'veth', 'peer', 'name', podIf]);
    run('ip', ['link', 'set', podIf, 'netns', this.name]);
    run('ip', ['addr', 'add', `${this.hostIP}/30`, 'dev', this.hostIf]);
    run('ip', ['link', 'set', this.hostIf, 'up']);
    const inside = (...args: string[]) => run('ip', ['netns', 'exec', this.name, ...args]);
    inside('ip', 'addr', 'add', `${this.podIP}/30`, 'dev', podIf);
    inside('ip', 'link', 'set', podIf, 'up');
    inside('ip', 'link', 'set', 'lo', 'up');
    inside('ip', 'route', 'add', `${apiServer.ip}/32`, 'dev', podIf);
    inside(
      'iptables',
      '-t',
      'nat',
      '-A',
      'OUTPUT',
      '-p',
      'tcp',
      '-d',
      apiServer.ip,
      '--dport',
      String(apiServer.port),
      '-j',
      'DNAT',
      '--to-destination',
      `${this.hostIP}:${apiServer.port}`,
    );
  }

  close(): void {
    try {
      run('ip', ['link', 'del', this.hostIf]);
    } catch {
      /* not there */
    }
    try {
      run('ip', ['netns', 'del', this.name]);
    } catch {
      /* not there */
    }
  }
}

export interface PodContainer {
  /** The pod spec (a Deployment's template.spec) and the container's name in it. */
  podSpec: any;
  container: string;
  /** Values for the downward API's fieldRefs (metadata.name, metadata.namespace, ...). */
  fields: Record<string, string>;
  /** Host folder holding token, ca.crt and namespace (the projected ServiceAccount volume). */
  serviceAccountDir?: string;
  /** KUBERNETES_SERVICE_HOST/PORT and the other variables the kubelet adds. */
  extraEnv: Record<string, string>;
  network: PodNetwork;
  /** cgroup path (relative to each hierarchy's root). */
  cgroupsPath: string;
}

/** Edits the bundle's config.json (as umoci unpacked it from the image config) into the pod's container. */
export function configureBundle(bundle: string, pod: PodContainer): any {
  const config = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8'));
  const spec = pod.podSpec;
  const c = spec.containers.find((x: any) => x.name === pod.container);
  if (!c) throw new Error(`no container ${pod.container} in the pod spec`);
  const sc = { ...spec.securityContext, ...c.securityContext };

  // Command and args override the image's entrypoint and cmd, as in a pod.
  if (c.command) config.process.args = [...c.command, ...(c.args ?? [])];
  else if (c.args) throw new Error('args without command: not supported here');
  config.process.terminal = false;
  if (c.workingDir) config.process.cwd = c.workingDir;

  // User and groups: runAsUser/runAsGroup, fsGroup and supplementalGroups as additional groups.
  if (sc.runAsUser !== undefined) config.process.user.uid = sc.runAsUser;
  if (sc.runAsGroup !== undefined) config.process.user.gid = sc.runAsGroup;
  const groups = [spec.securityContext?.fsGroup, ...(spec.securityContext?.supplementalGroups ?? [])].filter(
    (g) => g !== undefined,
  );
  if (groups.length) config.process.user.additionalGids = groups;
  if (sc.runAsNonRoot && config.process.user.uid === 0)
    throw new Error('runAsNonRoot, but the container would run as root');

  // Capabilities: the runtime's defaults, minus drop, plus add; ALL drops every one.
  const drop: string[] = sc.capabilities?.drop ?? [];
  const add: string[] = (sc.capabilities?.add ?? []).map((x: string) => `CAP_${x}`);
  for (const set of ['bounding', 'effective', 'inheritable', 'permitted', 'ambient']) {
    const current: string[] = config.process.capabilities[set] ?? [];
    const kept = drop.includes('ALL') ? [] : current.filter((x) => !drop.includes(x.replace(/^CAP_/, '')));
    config.process.capabilities[set] = [...new Set([...kept, ...add])];
  }
  config.process.noNewPrivileges = sc.allowPrivilegeEscalation === false || config.process.noNewPrivileges;
  config.root.readonly = sc.readOnlyRootFilesystem === true;

  // Environment: the image's, then the kubelet's service variables, then the container's own.
  const env = new Map<string, string>(
    config.process.env.map((line: string) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  env.delete('TERM');
  env.set('HOSTNAME', pod.fields['metadata.name']);
  for (const [k, v] of Object.entries(pod.extraEnv)) env.set(k, v);
  for (const e of c.env ?? []) {
    if (e.value !== undefined) env.set(e.name, e.value);
    else if (e.valueFrom?.fieldRef) {
      const value = pod.fields[e.valueFrom.fieldRef.fieldPath];
      if (value === undefined) throw new Error(`no value for fieldRef ${e.valueFrom.fieldRef.fieldPath}`);
      env.set(e.name, value);
    } else throw new Error(`env ${e.name}: only value and fieldRef are supported here`);
  }
  config.process.env = [...env].map(([k, v]) => `${k}=${v}`);
  config.hostname = pod.fields['metadata.name'];

  // Mounts: emptyDir volumes as tmpfs, and the ServiceAccount token volume read-only.
  for (const m of c.volumeMounts ?? []) {
    const volume = (spec.volumes ?? []).find((v: any) => v.name === m.name);
    if (!volume?.emptyDir) throw new Error(`volume ${m.name}: only emptyDir is supported here`);
    const size = volume.emptyDir.sizeLimit ? [`size=${bytes(volume.emptyDir.sizeLimit)}`] : [];
    config.mounts.push({
      destination: m.mountPath,
      type: 'tmpfs',
      source: 'tmpfs',
      options: ['nosuid', 'nodev', 'mode=1777', ...size, ...(m.readOnly ? ['ro'] : [])],
    });
  }
  if (spec.automountServiceAccountToken !== false && pod.serviceAccountDir) {
    config.mounts.push({
      destination: '/var/run/secrets/kubernetes.io/serviceaccount',
      type: 'bind',
      source: pod.serviceAccountDir,
      options: ['rbind', 'ro', 'nosuid', 'nodev', 'noexec'],
    });
  }

  // Resources as the kubelet's cgroup settings: limits.memory, requests.cpu as shares, limits.cpu as quota.
  const resources = config.linux.resources ?? {};
  const limits = c.resources?.limits ?? {};
  const requests = c.resources?.requests ?? {};
  if (limits.memory) resources.memory = { limit: bytes(limits.memory) };
  const cpu: any = {};
  if (requests.cpu) cpu.shares = Math.max(2, Math.floor((millicores(requests.cpu) * 1024) / 1000));
  if (limits.cpu) Object.assign(cpu, { period: 100_000, quota: Math.floor(millicores(limits.cpu) * 100) });
  if (Object.keys(cpu).length) resources.cpu = cpu;
  config.linux.resources = resources;
  config.linux.cgroupsPath = pod.cgroupsPath;

  // The pod's network namespace.
  config.linux.namespaces = config.linux.namespaces.map((ns: any) =>
    ns.type === 'network' ? { type: 'network', path: pod.network.path } : ns,
  );

  writeFileSync(join(bundle, 'config.json'), JSON.stringify(config, null, 2));
  return config;
}

/** A container run by the OCI runtime: its JSON log lines, its exit code. */
export class OciContainer {
  readonly lines: any[] = [];
  readonly output: string[] = [];
  readonly exited: Promise<number>;
  readonly id: string;
  private readonly child: ChildProcess;

  constructor(id: string, bundle: string) {
    this.id = id;
    OciContainer.remove(id);
    this.child = spawn(RUNTIME, ['run', '--bundle', bundle, id], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        this.output.push(line);
        try {
          this.lines.push(JSON.parse(line));
        } catch {
          /* not JSON */
        }
      });
    }
    // 'close', not 'exit': it comes after stdout and stderr have ended, so `lines` holds the last line.
    this.exited = new Promise((resolve) =>
      this.child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1))),
    );
  }

  state(): any {
    return JSON.parse(run(RUNTIME, ['state', this.id]));
  }

  /** What the kubelet asks the runtime to do on stop: SIGTERM to the container's first process. */
  kill(signal = 'TERM'): void {
    run(RUNTIME, ['kill', this.id, signal]);
  }

  static remove(id: string): void {
    try {
      run(RUNTIME, ['delete', '--force', id]);
    } catch {
      /* not there */
    }
  }
}

/** umoci unpack of an OCI layout reference (`oci:<dir>:<tag>`) into a bundle. */
export function unpack(ref: string, bundle: string): void {
  const image = ref.replace(/^oci:/, '');
  rmSync(bundle, { recursive: true, force: true });
  run('umoci', ['unpack', '--image', image, bundle]);
}

/** The cgroup v1 memory hierarchy's limit for a path, or v2's memory.max. */
export function memoryLimitOf(cgroupsPath: string): number | undefined {
  for (const file of [
    join('/sys/fs/cgroup/memory', cgroupsPath, 'memory.limit_in_bytes'),
    join('/sys/fs/cgroup', cgroupsPath, 'memory.max'),
  ]) {
    if (existsSync(file)) return Number(readFileSync(file, 'utf8').trim());
  }
  return undefined;
}
