// The real node's daemons under supervisord (scripts/real-node.sh): containerd, the kubelet,
// kube-proxy and kube-router. A second `cluster:up` on the running node, as docs/contribute/local-cluster.md's
// "start (or reuse)" invites, rewrites no file and restarts no daemon, and Services created after it work (it
// used to rewrite kube-proxy's configuration, kube-proxy exited on that and nothing started it
// again, so no Service created afterwards had rules); a configuration changed by hand is put back and
// only its daemon restarts; each daemon killed comes back while the node's pods run on. Each test
// leaves the node as it found it: every daemon RUNNING, the node Ready. Its own objects are in the
// namespace `supervision`, deleted at the end.
import { execFile } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { NODE_CLUSTER, ROOT } from '../../harness/cluster/env.ts';
import { commandsFor } from '../../harness/cluster/kube.ts';
import { eventually } from '../../harness/process/poll.ts';

const { ok, getJson } = commandsFor(NODE_CLUSTER);
const NODE = 'real-node';
const STATE = join(dirname(NODE_CLUSTER.kubeconfig), 'real-node');
const SUPERVISOR = join(STATE, 'supervisor');
const SUPERVISOR_LOG = join(STATE, 'logs', 'supervisord.log');
const DAEMONS = ['containerd', 'kubelet', 'kube-proxy', 'kube-router'] as const;
type Daemon = (typeof DAEMONS)[number];
const NS = 'supervision';
/** The Websites' web server (lib/workload/website-workload.ts), one of the images the node holds. */
const WEB_IMAGE = 'nginxinc/nginx-unprivileged:1.28.0-alpine';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env, maxBuffer: 64 << 20 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const supervisorctl = (...args: string[]) =>
  run('supervisorctl', ['-c', join(SUPERVISOR, 'supervisord.conf'), ...args]);

/** What `supervisorctl status` says of each program: its state, and its pid while it has one. */
async function programs(): Promise<Record<string, { state: string; pid?: number }>> {
  // It exits 3 when a program is not RUNNING: the lines say which.
  const { stdout } = await supervisorctl('status');
  const found: Record<string, { state: string; pid?: number }> = {};
  for (const line of stdout.split('\n')) {
    const m = /^(\S+)\s+([A-Z]+)(?:\s+pid (\d+),)?/.exec(line);
    if (m) found[m[1]] = { state: m[2], pid: m[3] ? Number(m[3]) : undefined };
  }
  return found;
}

/** The pid of each daemon, once all of them (and revive.py) are RUNNING. */
async function running(timeoutMs = 120_000): Promise<Record<Daemon, number>> {
  let last = {};
  return eventually(
    'every daemon of the node RUNNING under supervisord',
    async () => {
      const found = await programs();
      last = found;
      if (![...DAEMONS, 'revive'].every((name) => found[name]?.state === 'RUNNING')) return undefined;
      return Object.fromEntries(DAEMONS.map((name) => [name, found[name].pid!])) as Record<Daemon, number>;
    },
    { timeoutMs, progress: () => `supervisorctl status: ${JSON.stringify(last)}` },
  );
}

/** The pids of running(), once `daemon` runs with a pid other than `old`. */
function restarted(daemon: Daemon, old: number): Promise<Record<Daemon, number>> {
  let last = {};
  return eventually(
    `${daemon} started again by supervisord, RUNNING`,
    async () => {
      const found = await programs();
      last = found;
      return found[daemon]?.state === 'RUNNING' && found[daemon].pid !== old ? running() : undefined;
    },
    { timeoutMs: 120_000, progress: () => `supervisorctl status: ${JSON.stringify(last)}` },
  );
}

async function supervisordPid(): Promise<number> {
  return Number((await supervisorctl('pid')).stdout.trim());
}

function nodeReady(): Promise<true> {
  return eventually(
    `node ${NODE} Ready`,
    async () =>
      (await getJson(['node', NODE])).status.conditions.some((c: any) => c.type === 'Ready' && c.status === 'True') ||
      undefined,
    { timeoutMs: 120_000 },
  );
}

/** `scripts/cluster.sh up --real-node` again, with the environment the project's global setup used. */
async function reUp(): Promise<string> {
  const result = await run('bash', [join(ROOT, 'scripts/cluster.sh'), 'up', '--real-node'], NODE_CLUSTER.env);
  if (result.code !== 0)
    throw new Error(`scripts/cluster.sh up --real-node failed (${result.code}):\n${result.stderr}`);
  return result.stderr;
}

/** The inode and time of every file the node renders: what a no-op re-up leaves as it is. */
function renderedFiles(): Record<string, string> {
  const files = [
    'kubelet.yaml',
    'kube-proxy.yaml',
    'containerd/config.toml',
    'cni/net.d/10-website-stack.conflist',
    'kubelet.kubeconfig',
    'kube-proxy.kubeconfig',
    'kube-router.kubeconfig',
    'supervisor/supervisord.conf',
    'supervisor/revive.py',
    ...readdirSync(join(SUPERVISOR, 'conf.d')).map((f) => `supervisor/conf.d/${f}`),
  ];
  return Object.fromEntries(
    files.map((f) => {
      const s = statSync(join(STATE, f));
      return [f, `${s.ino} ${s.mtimeMs}`];
    }),
  );
}

/** The web server pod the tests keep running through every restart. */
function webPod() {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: NS, labels: { app: 'web' } },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: 'nginx',
          image: WEB_IMAGE,
          imagePullPolicy: 'Never',
          ports: [{ containerPort: 8080 }],
          resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
        },
      ],
    },
  };
}

/** Each running container of the web pod and of CoreDNS, by pod: its id and restart count. */
async function containers(): Promise<Record<string, string>> {
  const pods = [
    ...(await getJson(['pods', '-n', NS, '-l', 'app=web'])).items,
    ...(await getJson(['pods', '-n', 'kube-system', '-l', 'k8s-app=kube-dns'])).items,
  ];
  return Object.fromEntries(
    pods.map((p: any) => {
      const c = p.status.containerStatuses?.[0];
      const ready = p.status.conditions?.some((x: any) => x.type === 'Ready' && x.status === 'True');
      return [p.metadata.name, `${c?.containerID} restarts=${c?.restartCount} ready=${ready}`];
    }),
  );
}

/** A Service in front of the web pod. */
async function createService(name: string): Promise<void> {
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: NS },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    }),
  });
}

/** A Service created now answers on its ClusterIP from the host: kube-proxy wrote its rules. */
async function newServiceAnswers(name: string): Promise<void> {
  await createService(name);
  await serviceAnswers(name);
}

/** nginx answers from the host on the Service's ClusterIP (any HTTP response of nginx's). */
async function serviceAnswers(name: string): Promise<void> {
  const ip = (await getJson(['service', name, '-n', NS])).spec.clusterIP;
  await eventually(
    `Service ${name} answering on its ClusterIP ${ip}`,
    async () => {
      const response = await fetch(`http://${ip}/`, { signal: AbortSignal.timeout(3_000) });
      return response.headers.get('server')?.startsWith('nginx') === true;
    },
    { timeoutMs: 60_000 },
  );
}

/** What supervisord logs from now on (it appends). */
function supervisordLog(): () => string {
  const from = statSync(SUPERVISOR_LOG).size;
  return () => readFileSync(SUPERVISOR_LOG).subarray(from).toString('utf8');
}

/** What the script says when it changes or starts a daemon. */
const CHANGES = /\[real-node\] (updating |supervisord: |starting )/;

let initial: Record<string, string>;

beforeAll(async () => {
  await running();
  await ok(['create', 'namespace', NS]);
  await ok(['apply', '-f', '-'], { input: JSON.stringify(webPod()) });
  await createService('web');
  await eventually(
    'the web pod Ready',
    async () => Object.values(await containers()).filter((c) => c.endsWith('ready=true')).length === 2,
    { timeoutMs: 120_000, progress: () => 'see `kubectl -n supervision describe pod web`' },
  );
  initial = await containers();
  await serviceAnswers('web');
}, 300_000);

afterAll(async () => {
  await ok(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=120s']);
  // The node as the other files of the project expect it.
  await running();
  await nodeReady();
}, 300_000);

test('a second `cluster.sh up --real-node` on the running node rewrites no file and restarts nothing; a Service created after it answers', async () => {
  const pids = await running();
  const supervisord = await supervisordPid();
  const files = renderedFiles();

  const log = await reUp();
  expect(log).toContain(`reusing the running cluster '${NODE_CLUSTER.env.WEBSITE_STACK_CLUSTER_NAME}'`);
  expect(log).not.toMatch(CHANGES);
  expect(renderedFiles()).toEqual(files);

  // What failed before: every Service created after the re-up had no rules.
  await newServiceAnswers('after-re-up');
  await serviceAnswers('web');
  expect(await running()).toEqual(pids);
  expect(await supervisordPid()).toBe(supervisord);
  expect(await containers()).toEqual(initial);
}, 600_000);

test('kube-proxy, exiting when its configuration is written to, comes back; a re-up puts the file back and restarts kube-proxy only', async () => {
  const config = join(STATE, 'kube-proxy.yaml');
  const rendered = readFileSync(config, 'utf8');
  const before = await running();
  const logged = supervisordLog();

  // kube-proxy watches its configuration and exits on a write ("content of the proxy server's
  // configuration file was updated"), as it did on every re-up before: supervisord starts it again.
  appendFileSync(config, '# edited by hand\n');
  const edited = await restarted('kube-proxy', before['kube-proxy']);
  expect(logged()).toMatch(/exited: kube-proxy \(exit status \d+; not expected\)/);
  expect(edited).toEqual({ ...before, 'kube-proxy': edited['kube-proxy'] });
  await newServiceAnswers('after-kube-proxy-exit');

  const log = await reUp();
  expect(log).toContain(`[real-node] updating ${config}`);
  expect(log).toContain('[real-node] supervisord: kube-proxy: updated process group');
  expect(log.split('\n').filter((line) => CHANGES.test(line) && !/kube-proxy/.test(line))).toEqual([]);
  expect(readFileSync(config, 'utf8')).toBe(rendered);
  const after = await running();
  expect(after['kube-proxy']).not.toBe(edited['kube-proxy']);
  expect(after).toEqual({ ...before, 'kube-proxy': after['kube-proxy'] });

  await newServiceAnswers('after-config-change');
  await serviceAnswers('web');
  expect(await containers()).toEqual(initial);
}, 600_000);

describe.each(DAEMONS)('%s killed with SIGKILL', (daemon) => {
  test('comes back under supervisord, the others run on, the node is Ready, its pods keep running and a new Service answers', async () => {
    const before = await running();
    const logged = supervisordLog();
    process.kill(before[daemon], 'SIGKILL');

    const after = await restarted(daemon, before[daemon]);
    expect(after).toEqual({ ...before, [daemon]: after[daemon] });
    const log = logged();
    expect(log).toContain(`exited: ${daemon} (terminated by SIGKILL; not expected)`);
    expect(log).toContain(`spawned: '${daemon}' with pid ${after[daemon]}`);

    await nodeReady();
    // The same containers, never restarted, Ready again.
    await eventually(
      'the web pod and CoreDNS running on in the same containers, Ready',
      async () => JSON.stringify(await containers()) === JSON.stringify(initial),
      { timeoutMs: 120_000, progress: () => `before: ${JSON.stringify(initial)}` },
    );
    await newServiceAnswers(`after-${daemon}-killed`);
    await serviceAnswers('web');
  }, 300_000);
});
