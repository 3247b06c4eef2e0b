// Argo CD Core, for real, against a local cluster: the application controller, the repo server and
// the ApplicationSet controller of the release scripts/binaries.sh builds (one multi-call binary,
// started through links of those names), Redis from Debian as their cache, and Argo CD's own
// CRDs, RBAC and ConfigMaps from that release's manifests/core-install.yaml. A `git daemon` on
// loopback serves a git repository as any remote: Argo CD clones it, no shortcut. Shared by
// `npm run argocd:up` (scripts/argocd.ts) and the tests (test/argocd/).
//
// The controllers run on the host, with in-cluster configuration: the destination
// https://kubernetes.default.svc is resolved only that way. Each runs in a mount namespace of its
// own (unshare) where its ServiceAccount's token, the cluster CA and its namespace are at
// /var/run/secrets/kubernetes.io/serviceaccount, as a kubelet would mount them, with
// KUBERNETES_SERVICE_HOST/PORT pointing at the API server.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { type ClusterAccess, clusterEndpoint, kubectlOk } from '../cluster/kubectl.ts';
import { awaitHealthy, logTail, spawnLogged } from '../process/logged.ts';
import { eventually } from '../process/poll.ts';
import { freePort } from '../process/ports.ts';
import { stopProcesses } from '../process/processes.ts';
import { builtBinaries } from '../trace/local-stack.ts';

const execFileAsync = promisify(execFile);

/** The namespace Argo CD's Applications, ApplicationSets and settings live in. */
export const ARGOCD_NAMESPACE = 'argocd';

/** What core-install.yaml holds that runs as pods: here the processes run on the host instead. */
const POD_KINDS = new Set(['Deployment', 'StatefulSet', 'Service', 'NetworkPolicy']);

/** The three controllers, by the name the multi-call binary dispatches on. */
const COMPONENTS = ['argocd-repo-server', 'argocd-application-controller', 'argocd-applicationset-controller'] as const;

export interface ArgoCdOptions {
  readonly cluster: ClusterAccess;
  /** State: logs, pids, Redis configuration, tokens, the repo server's clones. Emptied first. */
  readonly dir: string;
  /** The git repository served to Argo CD (a checkout: its committed refs, not its working tree). */
  readonly repository: string;
  /** Leave the processes running after this one exits (`npm run argocd:up`). */
  readonly detached?: boolean;
  /**
   * How often the application controller compares each Application with the cluster
   * (`--app-resync`, without jitter), so that a test's window sees several comparisons.
   * @default Argo CD's own (120 s, plus up to 60 s of jitter)
   */
  readonly appResyncSeconds?: number;
}

export interface ArgoCd {
  /** The URL of `repository` for an Application's `repoURL`: `git://127.0.0.1:<port>/<name>`. */
  readonly repoUrl: string;
  readonly namespace: string;
  /** The process ids, by component (and `redis`, `git-daemon`). */
  readonly pids: Readonly<Record<string, number>>;
  /** Each process's log file, by the same names. */
  readonly logs: Readonly<Record<string, string>>;
  /** Stops every process (Argo CD's objects stay in the cluster). */
  stop(): Promise<void>;
}

/** Builds (once, cached) and locates the argocd binary and the manifests of its release. */
export function argoCdBinary(): { binary: string; coreInstall: string; version: string } {
  const binary = builtBinaries('argocd').argocd;
  // binaries.sh keeps the module's writable copy beside the binaries: <cache>/src/argocd-<version>;
  // the binary holds the release's components only (argocd-<version>-components).
  const version = basename(binary)
    .replace(/^argocd-/, '')
    .replace(/-components$/, '');
  const coreInstall = join(dirname(dirname(binary)), 'src', `argocd-${version}`, 'manifests', 'core-install.yaml');
  if (!existsSync(coreInstall))
    throw new Error(`Argo CD's manifests are missing at ${coreInstall}: remove ${binary} and rebuild it`);
  return { binary, coreInstall, version };
}

/**
 * Argo CD's CRDs, ServiceAccounts, RBAC, ConfigMaps and Secret from core-install.yaml, in
 * `namespace`; the AppProject `default` that an Argo CD API
 * server would create, allowing every repository and destination.
 */
export function argoCdObjects(
  coreInstall: string,
  namespace = ARGOCD_NAMESPACE,
): { items: Array<Record<string, any>> } {
  const clusterScoped = new Set(['CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding']);
  const items: Array<Record<string, any>> = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }];
  for (const document of parseAllDocuments(readFileSync(coreInstall, 'utf8'))) {
    const object = document.toJS() as Record<string, any> | null;
    if (!object || POD_KINDS.has(object.kind)) continue;
    if (!clusterScoped.has(object.kind)) object.metadata.namespace = namespace;
    // The bindings name the ServiceAccounts in the namespace the manifests assume.
    for (const subject of object.subjects ?? []) if (subject.kind === 'ServiceAccount') subject.namespace = namespace;
    items.push(object);
  }
  items.push({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'AppProject',
    metadata: { name: 'default', namespace },
    spec: {
      sourceRepos: ['*'],
      destinations: [{ server: '*', namespace: '*' }],
      clusterResourceWhitelist: [{ group: '*', kind: '*' }],
    },
  });
  // A legacy token Secret per controller: it does not expire, as a long-running `argocd:up` needs.
  for (const serviceAccount of ['argocd-application-controller', 'argocd-applicationset-controller'])
    items.push({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/service-account-token',
      metadata: {
        name: `${serviceAccount}-token`,
        namespace,
        annotations: { 'kubernetes.io/service-account.name': serviceAccount },
      },
    });
  return { items };
}

export interface GitServer {
  /** `git://127.0.0.1:<port>/<the repository's directory name>` */
  readonly url: string;
  readonly pid: number;
  readonly log: string;
  stop(): Promise<void>;
}

/**
 * Serves the git repository at `repository` (a checkout, or a new repository of `files` committed
 * there when given) with `git daemon` on loopback, as any remote is served: clients clone it.
 */
export async function serveGitRepository(
  repository: string,
  options: { files?: Readonly<Record<string, string>>; log?: string; detached?: boolean } = {},
): Promise<GitServer> {
  if (options.files) {
    rmSync(repository, { recursive: true, force: true });
    mkdirSync(repository, { recursive: true });
    for (const [file, text] of Object.entries(options.files)) writeFileSync(join(repository, file), text);
    const git = (...args: string[]) =>
      execFileAsync('git', ['-c', 'user.name=website-stack', '-c', 'user.email=tests@website-stack.invalid', ...args], {
        cwd: repository,
      });
    await git('init', '--quiet', '--initial-branch=main');
    await git('add', '.');
    await git('commit', '--quiet', '--message', 'test fixture');
  }
  const log = options.log ?? join(repository, '..', `${basename(repository)}.git-daemon.log`);
  const port = await freePort();
  const daemon = spawnLogged(
    'git-daemon',
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--listen=127.0.0.1',
      `--port=${port}`,
      `--base-path=${dirname(repository)}`,
      '--export-all',
      '--informative-errors',
      // The allowed directories, matched after git daemon resolves a checkout to its .git.
      repository,
      join(repository, '.git'),
    ],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      logFile: log,
      ownGroup: true,
      outlive: options.detached ?? false,
    },
  );
  const child = daemon.process;
  const url = `git://127.0.0.1:${port}/${basename(repository)}`;
  const stop = () => stopProcesses({ 'git-daemon': child.pid! });
  try {
    await eventually(
      `git daemon to serve ${url}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`git daemon exited; log:\n${logTail(log)}`);
        return (await execFileAsync('git', ['ls-remote', url, 'HEAD']).catch(() => undefined)) !== undefined;
      },
      { stopOnError: true, intervalMs: 100 },
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, pid: child.pid!, log, stop };
}

/** True once Redis at 127.0.0.1:`port` accepts `password` and answers PING. */
function redisAnswers(port: number, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(`AUTH ${password}\r\nPING\r\n`));
    socket.on('data', (data) => {
      reply += data.toString();
      if (reply.includes('\r\n+PONG\r\n')) done(reply.startsWith('+OK'));
      else if (reply.startsWith('-')) done(false);
    });
  });
}

/** The arguments that run `command` with `serviceAccount` mounted as a kubelet would (see the header). */
function inClusterMount(serviceAccountDir: string, command: readonly string[]): string[] {
  const script = [
    'set -eu',
    // A tmpfs of this namespace's own over /run (/var/run links to it): the host's stays untouched.
    'mount -t tmpfs -o mode=0755 tmpfs /run',
    'mkdir -p /run/secrets/kubernetes.io/serviceaccount',
    'mount --bind -o ro "$0" /run/secrets/kubernetes.io/serviceaccount',
    'exec "$@"',
  ].join('\n');
  const user = process.getuid?.() === 0 ? [] : ['--user', '--map-root-user'];
  return [...user, '--mount', '--propagation', 'private', 'sh', '-c', script, serviceAccountDir, ...command];
}

/** Starts Argo CD Core against `cluster`, serving `repository`; see the header. */
export async function startArgoCd(options: ArgoCdOptions): Promise<ArgoCd> {
  const { cluster, dir, repository, detached = false } = options;
  const { binary, coreInstall } = argoCdBinary();
  rmSync(dir, { recursive: true, force: true });
  for (const sub of ['bin', 'logs', 'tmp', 'serviceaccount']) mkdirSync(join(dir, sub), { recursive: true });
  for (const component of COMPONENTS) symlinkSync(binary, join(dir, 'bin', component));

  // The CRDs first: the AppProject is one of their objects.
  const { items } = argoCdObjects(coreInstall);
  const apply = (objects: Array<Record<string, any>>) =>
    kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    });
  const crds = items.filter((o) => o.kind === 'CustomResourceDefinition');
  await apply(crds);
  // Not `kubectl wait`: it fails on a CRD whose status is not written yet.
  await eventually('Argo CD CRDs to be established', async () => {
    const established = await kubectlOk(cluster, [
      'get',
      ...crds.map((crd) => `crd/${crd.metadata.name}`),
      '-o',
      'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Established")].status}{"\\n"}{end}',
    ]);
    return established.split('\n').filter((s) => s === 'True').length === crds.length;
  });
  await apply(items.filter((o) => o.kind !== 'CustomResourceDefinition'));
  // The key Argo CD's API server generates at its first start (Core has none): settings without
  // it are incomplete, and the ApplicationSet controller then starts without its webhook handler.
  // Kept across restarts, as the API server keeps it.
  const secretKey = await kubectlOk(cluster, [
    'get',
    'secret',
    'argocd-secret',
    '-n',
    ARGOCD_NAMESPACE,
    '-o',
    'jsonpath={.data.server\\.secretkey}',
  ]);
  if (!secretKey)
    await kubectlOk(cluster, ['apply', '--server-side', '--field-manager', 'argocd-server-secretkey', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'argocd-secret', namespace: ARGOCD_NAMESPACE },
        data: { 'server.secretkey': randomBytes(32).toString('base64') },
      }),
    });
  // Each controller's token, the cluster's CA and the namespace, as a kubelet mounts them.
  const { server, ca } = await clusterEndpoint(cluster);
  const serviceAccountDir = async (serviceAccount: string) => {
    const token = await eventually(`the token of ServiceAccount ${serviceAccount}`, async () => {
      const out = await kubectlOk(cluster, [
        'get',
        'secret',
        `${serviceAccount}-token`,
        '-n',
        ARGOCD_NAMESPACE,
        '-o',
        'jsonpath={.data.token}',
      ]);
      return out ? Buffer.from(out, 'base64').toString() : undefined;
    });
    const path = join(dir, 'serviceaccount', serviceAccount);
    mkdirSync(path, { mode: 0o700 });
    writeFileSync(join(path, 'token'), token, { mode: 0o600 });
    writeFileSync(join(path, 'ca.crt'), readFileSync(ca));
    writeFileSync(join(path, 'namespace'), ARGOCD_NAMESPACE);
    return path;
  };
  const api = new URL(server);

  const pids: Record<string, number> = {};
  const logs: Record<string, string> = {};
  const stop = () => stopProcesses(pids);
  const run = (name: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) => {
    logs[name] = join(dir, 'logs', `${name}.log`);
    const child = spawnLogged(name, command, args, {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: join(dir, 'tmp'), ...env },
      logFile: logs[name],
      ownGroup: true,
      outlive: detached,
    });
    if (child.process.pid !== undefined) pids[name] = child.process.pid;
    return child;
  };

  try {
    // Redis with a password of this run's own, in a file only this user reads (not on a command line).
    const redisPort = await freePort();
    const redisPassword = randomBytes(24).toString('hex');
    const redisConfig = join(dir, 'redis.conf');
    writeFileSync(
      redisConfig,
      `bind 127.0.0.1\nport ${redisPort}\nrequirepass ${redisPassword}\nsave ""\nappendonly no\ndir ${join(dir, 'tmp')}\n`,
      { mode: 0o600 },
    );
    const redis = run('redis', 'redis-server', [redisConfig]);
    await eventually(
      'Redis to answer',
      async () => {
        if (redis.process.exitCode !== null) throw new Error(`redis-server exited; log:\n${logTail(redis.logFile)}`);
        return redisAnswers(redisPort, redisPassword);
      },
      { stopOnError: true, intervalMs: 100 },
    );
    const redisAddress = `127.0.0.1:${redisPort}`;
    const common = { REDIS_PASSWORD: redisPassword, ARGOCD_LOG_FORMAT_ENABLE_FULL_TIMESTAMP: 'true' };

    const git = await serveGitRepository(repository, { log: join(dir, 'logs', 'git-daemon.log'), detached });
    pids['git-daemon'] = git.pid;
    logs['git-daemon'] = git.log;
    const repoUrl = git.url;

    const repoPort = await freePort();
    const repoMetrics = await freePort();
    const repoServer = run(
      'argocd-repo-server',
      join(dir, 'bin', 'argocd-repo-server'),
      [
        '--port',
        String(repoPort),
        '--metrics-address',
        '127.0.0.1',
        '--metrics-port',
        String(repoMetrics),
        '--redis',
        redisAddress,
        '--disable-tls',
        '--logformat',
        'json',
      ],
      // No GnuPG here: commit signature verification is off, as Argo CD's own local setup has it.
      { ...common, ARGOCD_GPG_ENABLED: 'false' },
    );
    const inCluster = { KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port || '443' };
    // A controller with in-cluster configuration, as its ServiceAccount (named as the component).
    const runInCluster = async (name: string, args: readonly string[]) =>
      run(
        name,
        'unshare',
        inClusterMount(await serviceAccountDir(name), [join(dir, 'bin', name), ...args, '--logformat', 'json']),
        { ...common, ...inCluster },
      );
    const controllerMetrics = await freePort();
    const controller = await runInCluster('argocd-application-controller', [
      '--repo-server',
      `127.0.0.1:${repoPort}`,
      '--repo-server-plaintext',
      '--redis',
      redisAddress,
      '--metrics-port',
      String(controllerMetrics),
      // Each resource's health in the Application (kubectl shows it); Argo CD's API server, which
      // Core leaves out, would read it from Redis otherwise.
      '--persist-resource-health',
      ...(options.appResyncSeconds
        ? ['--app-resync', String(options.appResyncSeconds), '--app-resync-jitter', '0']
        : []),
    ]);
    const [appSetMetrics, appSetProbe, appSetWebhook] = [await freePort(), await freePort(), await freePort()];
    const applicationSets = await runInCluster('argocd-applicationset-controller', [
      '--metrics-addr',
      `127.0.0.1:${appSetMetrics}`,
      '--probe-addr',
      `127.0.0.1:${appSetProbe}`,
      '--webhook-addr',
      `127.0.0.1:${appSetWebhook}`,
      '--argocd-repo-server',
      `127.0.0.1:${repoPort}`,
      '--repo-server-plaintext',
    ]);

    await awaitHealthy(repoServer, `http://127.0.0.1:${repoMetrics}/metrics`, 120_000);
    await awaitHealthy(controller, `http://127.0.0.1:${controllerMetrics}/healthz`, 120_000);
    // Its probe address answers only the checks registered on it, and it registers none.
    await awaitHealthy(applicationSets, `http://127.0.0.1:${appSetMetrics}/metrics`, 120_000);
    return { repoUrl, namespace: ARGOCD_NAMESPACE, pids, logs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
