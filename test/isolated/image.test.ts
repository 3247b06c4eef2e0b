// The operator image, built without a Docker engine (scripts/image.sh build: buildah runs the
// Dockerfile on a base assembled from Debian packages and the npm package's Node), checked as an
// image (config, file tree), then run by a real OCI runtime (runc) exactly as dist/'s Deployment
// describes its pod: user, read-only root, no capabilities, env, memory limit as a cgroup limit, the
// ServiceAccount token volume and KUBERNETES_SERVICE_HOST/PORT, in a network namespace of its own.
// The API server calls its conversion webhook through the webhook Service (aggregator routing dials
// the Service's endpoints: the container's address), the probes are called as the kubelet calls them,
// and SIGTERM stops it. Its memory is measured there, in the cgroup with the Deployment's limit: the
// bundle idle and holding Websites, beside the TypeScript sources run by Node (type stripping, as the
// operator ran before it was bundled) and a bare Node process, each a fresh container of the same
// pod spec in the same run.
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ISOLATED_CLUSTER, ROOT } from '../../harness/cluster/env.ts';
import { commandsFor, website } from '../../harness/cluster/kube.ts';
import {
  bytes,
  configureBundle,
  memoryLimitOf,
  OciContainer,
  PodNetwork,
  unpack,
} from '../../harness/operator/oci-pod.ts';
import { OPERATOR_NS as NS, operatorRbacManifests } from '../../harness/operator/operator-manifests.ts';
import { eventually } from '../../harness/process/poll.ts';
import { steadyRss } from '../../harness/process/proc.ts';
import { buildOperator } from '../../operator/bundle.ts';

// On a cluster of its own (ISOLATED_CLUSTER): the operator runs in website-system and the API
// server calls its container for conversions.
const { getJson, kubectl, loadClusterInfo, ok } = commandsFor(ISOLATED_CLUSTER);

const dist = parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-operator.yaml'), 'utf8')).map(
  (d) => d.toJS(),
);
const deployment = dist.find((m) => m?.kind === 'Deployment');
const webhookService = dist.find((m) => m?.kind === 'Service');
const podSpec = deployment.spec.template.spec;
const container = podSpec.containers[0];
const portOf = (name: string) => container.ports.find((p: any) => p.name === name).containerPort;
const POD = `${deployment.metadata.name}-image`;
// The entrypoint as the Dockerfile declares it (the one place that names the bundle's entry in the image).
const ENTRYPOINT: string[] = JSON.parse(
  /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1],
);

let ref: string;
let work: string;
let bundle: string;
let network: PodNetwork | undefined;
let operator: OciContainer | undefined;
let cgroupsPath: string;
let config: any;
let extraEnv: Record<string, string>;
let serviceAccountDir: string;
/** Other containers of the same pod spec (the memory comparison), removed after the tests. */
const others: OciContainer[] = [];
/** VmRSS readings (bytes) for the memory table printed at the end. */
const memory: Array<{ what: string; bytes: number }> = [];
/** Websites the memory test creates besides image-v1 and image-beta. */
const MEMORY_WEBSITES = Array.from({ length: 20 }, (_, i) => `image-memory-${i}`);

/** A timer that does not keep jest alive after the tests. */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** A plain HTTP GET that closes its connection (as the kubelet's probes do: no keep-alive). */
function get(
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 5000,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent: false, headers, timeout: timeoutMs }, (response) => {
      let body = '';
      response
        .setEncoding('utf8')
        .on('data', (chunk) => (body += chunk))
        .on('end', () => resolve({ status: response.statusCode!, body }));
    });
    request.on('timeout', () => request.destroy(new Error(`GET ${url} timed out`))).on('error', reject);
  });
}

/** An HTTP GET as the kubelet's httpGet probe makes it: pod IP, the named port, its timeout (1 s by default). */
async function probe(kind: 'livenessProbe' | 'readinessProbe'): Promise<number> {
  const { path, port } = container[kind].httpGet;
  const url = `http://${network!.podIP}:${typeof port === 'string' ? portOf(port) : port}${path}`;
  return (
    await get(url, { 'User-Agent': 'kube-probe/1.36', Accept: '*/*' }, (container[kind].timeoutSeconds ?? 1) * 1000)
  ).status;
}

/** VmRSS of a process in bytes: the median of three readings half a second apart. */
const rss = (pid: number) => steadyRss(pid, 500);

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Sum of a metric's samples in the container's /metrics. */
async function metricOf(name: string): Promise<number> {
  const text = (await get(`http://${network!.podIP}:${portOf('metrics')}/metrics`)).body;
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/**
 * Another container of the same pod spec, in the same network namespace (the previous one has
 * exited) under a cgroup of its own with the same limits, running `command` instead of the image's
 * entrypoint; `mounts` are bound read-only at the same path.
 */
function otherContainer(id: string, command: string[], mounts: string[] = []): OciContainer {
  const dir = join(work, id);
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(work, 'image-config.json'), join(dir, 'config.json'));
  const spec = { ...podSpec, containers: [{ ...container, command }] };
  const other = configureBundle(dir, {
    podSpec: spec,
    container: container.name,
    fields: { 'metadata.name': id, 'metadata.namespace': NS },
    serviceAccountDir,
    extraEnv,
    network: network!,
    cgroupsPath: `/website-stack-image/${id}`,
  });
  other.root.path = join(bundle, 'rootfs');
  for (const source of mounts)
    other.mounts.push({ destination: source, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(other, null, 2));
  const started = new OciContainer(id, dir);
  others.push(started);
  return started;
}

/**
 * Starts an operator container, waits until it is ready, leads and has reconciled every Website in
 * the namespace once (its first pass), then for the queue to drain and 5 s more; returns its RSS and
 * stops it (SIGTERM, as the kubelet would).
 */
async function rssAfterFirstPass(started: OciContainer): Promise<number> {
  const websites = (await getJson(['websites', '-n', NS])).items.length;
  await eventually('/readyz', async () => ((await probe('readinessProbe')) === 200 ? true : undefined), 120_000);
  await eventually(
    `the first pass over ${websites} Websites`,
    async () => ((await metricOf('controller_runtime_reconcile_total')) >= websites ? true : undefined),
    120_000,
  );
  await eventually(
    'an empty work queue',
    async () => ((await metricOf('workqueue_depth')) === 0 ? true : undefined),
    60_000,
  );
  await sleep(5000);
  const bytes = await rss(started.state().pid);
  started.kill('TERM');
  await Promise.race([started.exited, sleep(podSpec.terminationGracePeriodSeconds * 1000)]);
  return bytes;
}

beforeAll(async () => {
  // The build prints image=oci:<layout>:<tag> and its size; its progress goes to stderr.
  const built = execFileSync('bash', [join(ROOT, 'scripts/image.sh'), 'build'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  }).toString();
  ref = /^image=(.*)$/m.exec(built)![1];
  console.log(`[image] ${ref}: ${/^size=(.*)$/m.exec(built)?.[1]}`);
  work = mkdtempSync(join(tmpdir(), 'image-'));
  bundle = join(work, 'bundle');
  unpack(ref, bundle);
  // The image's own config as umoci wrote it, before it becomes the pod's (other containers start from it).
  copyFileSync(join(bundle, 'config.json'), join(work, 'image-config.json'));

  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: operatorRbacManifests()
      .map((m) => JSON.stringify(m))
      .join('\n'),
  });
  await kubectl(['delete', 'lease', 'website-operator', '-n', NS, '--ignore-not-found']);

  // Where the API server is, as a pod learns it: the `kubernetes` Service's endpoint.
  const slice = await getJson(['endpointslice', 'kubernetes', '-n', 'default']);
  const apiServer = { ip: slice.endpoints[0].addresses[0], port: slice.ports[0].port };
  network = new PodNetwork(process.pid, apiServer);

  // dist/'s webhook Service without its selector (no pod carries the labels: there is no kubelet),
  // its endpoints the container's address and the port the Service's targetPort names.
  const { selector: _selector, ...serviceSpec } = webhookService.spec;
  const webhookPort = portOf(webhookService.spec.ports[0].targetPort);
  await kubectl(['delete', 'service', webhookService.metadata.name, '-n', NS, '--ignore-not-found']);
  await ok(['apply', '-f', '-'], {
    input: [
      { ...webhookService, spec: serviceSpec },
      {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: webhookService.metadata.name, namespace: NS },
        subsets: [
          { addresses: [{ ip: network.podIP }], ports: [{ name: 'webhook', port: webhookPort, protocol: 'TCP' }] },
        ],
      },
      {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        addressType: 'IPv4',
        metadata: {
          name: `${webhookService.metadata.name}-image`,
          namespace: NS,
          labels: {
            'kubernetes.io/service-name': webhookService.metadata.name,
            'endpointslice.kubernetes.io/managed-by': 'image.test',
          },
        },
        endpoints: [{ addresses: [network.podIP], conditions: { ready: true } }],
        ports: [{ name: 'webhook', port: webhookPort, protocol: 'TCP' }],
      },
    ]
      .map((m) => JSON.stringify(m))
      .join('\n'),
  });

  // The ServiceAccount volume: a bound token (TokenRequest), the cluster CA, the namespace.
  serviceAccountDir = join(work, 'serviceaccount');
  const sa = serviceAccountDir;
  mkdirSync(sa);
  writeFileSync(
    join(sa, 'token'),
    (await ok(['create', 'token', podSpec.serviceAccountName, '-n', NS, '--duration=1h'])).trim(),
  );
  writeFileSync(join(sa, 'ca.crt'), readFileSync((await loadClusterInfo()).ca));
  writeFileSync(join(sa, 'namespace'), NS);

  cgroupsPath = `/website-stack-image/${POD}`;
  extraEnv = {
    KUBERNETES_SERVICE_HOST: apiServer.ip,
    KUBERNETES_SERVICE_PORT: String(apiServer.port),
    KUBERNETES_SERVICE_PORT_HTTPS: String(apiServer.port),
  };
  config = configureBundle(bundle, {
    podSpec,
    container: container.name,
    fields: { 'metadata.name': POD, 'metadata.namespace': NS },
    serviceAccountDir: sa,
    extraEnv,
    network,
    cgroupsPath,
  });
  operator = new OciContainer(POD, bundle);
}, 1_200_000);

afterAll(async () => {
  for (const running of [operator, ...others]) {
    if (!running) continue;
    try {
      running.kill('KILL');
    } catch {
      /* already stopped */
    }
    await Promise.race([running.exited, sleep(5000)]);
    OciContainer.remove(running.id);
  }
  network?.close();
  for (const name of ['image-v1', 'image-beta', ...MEMORY_WEBSITES]) {
    await kubectl(['patch', 'website', name, '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await kubectl(['delete', 'website', name, '-n', NS, '--ignore-not-found', '--wait=false']);
  }
  await kubectl(['delete', 'endpointslice', `${webhookService.metadata.name}-image`, '-n', NS, '--ignore-not-found']);
  await kubectl(['delete', 'service', webhookService.metadata.name, '-n', NS, '--ignore-not-found']);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the operator image', () => {
  test('its config: user 65532, the bundle as entrypoint, the three ports, production mode', () => {
    const layout = ref.replace(/^oci:/, '').replace(/:[^:/]+$/, '');
    const blob = (digest: string) => JSON.parse(readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8'));
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8'));
    const manifest = blob(index.manifests[0].digest);
    const image = blob(manifest.config.digest);
    expect(image.config.User).toBe('65532:65532');
    expect(image.config.Entrypoint).toEqual(ENTRYPOINT);
    expect(ENTRYPOINT[0]).toBe('node');
    expect(image.config.Cmd ?? []).toEqual([]);
    expect(Object.keys(image.config.ExposedPorts).sort()).toEqual(['8080/tcp', '8081/tcp', '9443/tcp']);
    expect(image.config.Env).toContain('NODE_ENV=production');
    expect(image.config.WorkingDir).toBe('/app');
    expect(image.os).toBe('linux');
    // The Deployment's ports are the ones the image exposes.
    expect(container.ports.map((p: any) => `${p.containerPort}/tcp`).sort()).toEqual(
      Object.keys(image.config.ExposedPorts).sort(),
    );
    const size = manifest.layers.reduce((sum: number, layer: any) => sum + layer.size, 0);
    console.log(`[image] ${manifest.layers.length} layers, ${(size / 2 ** 20).toFixed(1)} MiB compressed`);
  });

  test('its file tree: Node 22 and the operator bundle only, the same files the tests run', async () => {
    const app = join(bundle, 'rootfs/app');
    // The entrypoint: node, its flags, then the bundle's entry.
    const entry = ENTRYPOINT.at(-1)!;
    expect(readdirSync(app).sort()).toEqual(['chunks', basename(entry)]);
    expect(existsSync(join(bundle, 'rootfs', entry))).toBe(true);
    // No package is installed: everything the operator uses is inside the bundle.
    expect(existsSync(join(app, 'node_modules'))).toBe(false);
    // Chunk names carry content hashes: the image holds exactly the bundle built here from the same sources.
    const local = await buildOperator();
    const built = Object.keys(local.metafile.outputs)
      .map((output) => relative(local.dir, join(ROOT, output)))
      .sort();
    expect(
      readdirSync(app, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.mjs'))
        .sort(),
    ).toEqual(built);
    expect(
      execFileSync('chroot', [join(bundle, 'rootfs'), 'node', '--version'])
        .toString()
        .trim(),
    ).toBe(`v${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).devDependencies.node}`);
  });

  test('runc runs it with the pod spec: uid/gid, no capabilities, no_new_privs, read-only root, memory limit', async () => {
    const state = await eventually('the container to run', async () => {
      const s = operator!.state();
      return s.status === 'running' ? s : undefined;
    });
    const status = readFileSync(`/proc/${state.pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)![1].split(/\s+/).filter(Boolean);
    const uid = podSpec.securityContext.runAsUser;
    const gid = podSpec.securityContext.runAsGroup;
    expect(field('Uid')).toEqual([uid, uid, uid, uid].map(String));
    expect(field('Gid')).toEqual([gid, gid, gid, gid].map(String));
    expect(field('Groups')).toEqual([String(podSpec.securityContext.fsGroup)]);
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
      expect(field(set)).toEqual(['0000000000000000']);
    expect(field('NoNewPrivs')).toEqual(['1']);
    const rootMount = readFileSync(`/proc/${state.pid}/mountinfo`, 'utf8')
      .split('\n')
      .find((line) => line.split(' ')[4] === '/')!;
    expect(rootMount.split(' ')[5].split(',')).toContain('ro');
    // Debian's /var/run is a link to /run, so the runtime mounts the volume at the link's target.
    const serviceAccountMount = readFileSync(`/proc/${state.pid}/mountinfo`, 'utf8')
      .split('\n')
      .find((line) =>
        ['/var/run/secrets/kubernetes.io/serviceaccount', '/run/secrets/kubernetes.io/serviceaccount'].includes(
          line.split(' ')[4],
        ),
      )!;
    expect(serviceAccountMount.split(' ')[5].split(',')).toContain('ro');
    expect(memoryLimitOf(cgroupsPath)).toBe(bytes(container.resources.limits.memory));
    expect(config.process.env).toEqual(
      expect.arrayContaining([`POD_NAME=${POD}`, `OPERATOR_NAMESPACE=${NS}`, 'WEBHOOK_CERT_MODE=operator']),
    );
    // It found the cluster the way it does in a pod: no kubeconfig, the token file and the service variables.
    expect(config.process.env.some((e: string) => e.startsWith('KUBECONFIG='))).toBe(false);
  });

  test('answers its liveness and readiness probes with 200', async () => {
    expect(
      await eventually('/healthz', async () => ((await probe('livenessProbe')) === 200 ? 200 : undefined), 60_000),
    ).toBe(200);
    expect(
      await eventually('/readyz', async () => ((await probe('readinessProbe')) === 200 ? 200 : undefined), 90_000),
    ).toBe(200);
  }, 180_000);

  test("memory: idle in the cgroup of the Deployment's limit, well under the memory request", async () => {
    await sleep(5000);
    const idle = await rss(operator!.state().pid);
    memory.push({ what: 'bundle (the image), idle, no Website', bytes: idle });
    expect(idle).toBeLessThan(bytes(container.resources.requests.memory));
  }, 60_000);

  test('reconciles a Website to Ready', async () => {
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify(website('image-v1', NS, { title: 'From the image', replicas: 1 })),
    });
    const ready = await eventually(
      'the Website to be Ready',
      async () => {
        const current = await getJson(['website', 'image-v1', '-n', NS]);
        return current.status?.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'True');
      },
      90_000,
    );
    expect(ready.message).toBe('1/1 replicas available');
    const children = await getJson(['deployment', 'website-image-v1', '-n', NS]);
    expect(children.metadata.ownerReferences[0]).toMatchObject({ kind: 'Website', name: 'image-v1', controller: true });
  }, 120_000);

  test('the API server converts v1beta1 Websites through its webhook Service', async () => {
    // The operator writes the webhook's CA into the CRD (WEBHOOK_CERT_MODE=operator).
    await eventually('the CRD to carry the webhook CA', async () => {
      const crd = await getJson(['crd', 'websites.web.example.com']);
      const config = crd.spec.conversion.webhook?.clientConfig;
      return config?.caBundle && config.service?.name === webhookService.metadata.name ? true : undefined;
    });
    const beta = {
      apiVersion: 'web.example.com/v1beta1',
      kind: 'Website',
      metadata: { name: 'image-beta', namespace: NS },
      spec: { heading: 'Through the image', instances: 2, theme: { color: '#3F51B5' } },
    };
    await eventually('the API server to create a v1beta1 Website through the webhook', async () => {
      const result = await kubectl(['create', '-f', '-'], { input: JSON.stringify(beta) });
      if (result.code === 0 || /AlreadyExists/.test(result.stderr)) return true;
      throw new Error(result.stderr);
    });
    expect((await getJson(['websites.v1.web.example.com', 'image-beta', '-n', NS])).spec).toEqual({
      title: 'Through the image',
      replicas: 2,
      color: '#3F51B5',
    });
    expect((await getJson(['websites.v1beta1.web.example.com', 'image-v1', '-n', NS])).spec).toEqual({
      heading: 'From the image',
      instances: 1,
      theme: { color: '#2196F3' },
    });
    const metrics = (await get(`http://${network!.podIP}:${portOf('metrics')}/metrics`)).body;
    const served = metrics
      .split('\n')
      .filter((l) => l.startsWith('conversion_webhook_requests_total'))
      .reduce((s, l) => s + Number(l.split(' ').pop()), 0);
    expect(served).toBeGreaterThan(0);
  }, 120_000);

  test(`memory: after reconciling ${MEMORY_WEBSITES.length} more Websites, still under the memory request`, async () => {
    await ok(['apply', '-f', '-'], {
      input: MEMORY_WEBSITES.map((name) =>
        JSON.stringify(website(name, NS, { title: `Memory ${name}`, replicas: 1 })),
      ).join('\n'),
    });
    await eventually(
      `the ${MEMORY_WEBSITES.length} Websites to be Ready`,
      async () => {
        const items = (await getJson(['websites', '-n', NS])).items.filter((w: any) =>
          MEMORY_WEBSITES.includes(w.metadata.name),
        );
        return items.length === MEMORY_WEBSITES.length &&
          items.every((w: any) => w.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'))
          ? true
          : undefined;
      },
      180_000,
    );
    await sleep(5000);
    const holding = await rss(operator!.state().pid);
    memory.push({
      what: `bundle (the image), after reconciling ${MEMORY_WEBSITES.length + 2} Websites`,
      bytes: holding,
    });
    expect(holding).toBeLessThan(bytes(container.resources.requests.memory));
  }, 240_000);

  test('SIGTERM ends it promptly with exit code 0, the Lease released', async () => {
    const start = Date.now();
    operator!.kill('TERM');
    const code = await Promise.race([
      operator!.exited,
      sleep(podSpec.terminationGracePeriodSeconds * 1000).then(() => 'still running'),
    ]);
    const seconds = (Date.now() - start) / 1000;
    console.log(`[image] stopped ${seconds.toFixed(1)} s after SIGTERM`);
    // Within the grace period the kubelet gives it (the line above reports how long it took):
    // exit code 0, and its own shutdown deadline never struck.
    expect(code).toBe(0);
    const messages = operator!.lines.map((line) => line.msg);
    expect(messages).not.toContain('shutdown timed out; exiting');
    // Node, the container's first process, handled the signal itself and shut down in order.
    expect(operator!.lines.find((line) => line.msg?.startsWith('shutting down'))?.signal).toBe('SIGTERM');
    expect(messages[messages.length - 1]).toBe('stopped');
    const lease = await getJson(['lease', 'website-operator', '-n', NS]);
    expect(lease.spec.holderIdentity ?? '').not.toBe(POD);
  }, 60_000);

  test('memory beside the TypeScript sources and a bare Node, fresh containers of the same pod spec: the bundle takes far less', async () => {
    // Each a fresh process after its first pass over the same Websites; the image's Node runs all three.
    const bundled = await rssAfterFirstPass(otherContainer(`${POD}-bundle`, ENTRYPOINT));
    const sources = await rssAfterFirstPass(
      otherContainer(
        `${POD}-sources`,
        // With the entrypoint's Node flags: the sources differ from the bundle in nothing else.
        [
          ...ENTRYPOINT.slice(0, -1),
          '--disable-warning=ExperimentalWarning',
          join(ROOT, 'operator/src/bin/operator.ts'),
        ],
        [ROOT],
      ),
    );
    const bare = otherContainer(`${POD}-bare-node`, ['node', '-e', 'setInterval(() => {}, 1000)']);
    await eventually('the bare Node container to run', async () =>
      bare.state().status === 'running' ? true : undefined,
    );
    await sleep(5000);
    const bareNode = await rss(bare.state().pid);
    bare.kill('KILL');
    const websites = (await getJson(['websites', '-n', NS])).items.length;
    memory.push(
      {
        what: `bundle (the image's entrypoint), fresh, after its first pass over ${websites} Websites`,
        bytes: bundled,
      },
      {
        what: `TypeScript sources (node operator/src/bin/operator.ts), fresh, after its first pass over ${websites} Websites`,
        bytes: sources,
      },
      { what: "bare Node (node -e 'setInterval(() => {}, 1000)')", bytes: bareNode },
    );
    console.log(
      `[image] operator RSS in the pod (memory limit ${container.resources.limits.memory}, request ${container.resources.requests.memory}; ` +
        `${container.env.find((e: any) => e.name === 'NODE_OPTIONS')?.value ?? 'no NODE_OPTIONS'}):\n` +
        memory.map((m) => `  ${m.what}: ${mib(m.bytes)} (${(m.bytes / bareNode).toFixed(2)}× bare Node)`).join('\n'),
    );
    expect(bundled).toBeLessThan(sources);
    expect(bundled).toBeLessThan(bytes(container.resources.requests.memory));
  }, 600_000);
});
