// dist/ as users apply it (`kubectl apply -f dist/<folder>/`), on a cluster whose one node is real
// (scripts/real-node.sh: kubelet, containerd and runc, the bridge CNI plugin, kube-proxy, kube-router
// enforcing NetworkPolicies, CoreDNS), with the images scripts/node-images.sh builds under the names
// dist/ gives them. Every pod runs: the operator from its image with the token the kubelet mounts,
// Websites' nginx under Pod Security restricted, the trace stack finding itself by DNS. The suites
// run in order on one cluster: the operator, its Websites and the policies around them, the trace
// stack, then the shell operator in the operator's place.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import {
  CLIENT_IMAGE,
  clusterIP,
  connects,
  dist,
  exec,
  getJson,
  httpGet,
  kubectl,
  NODE,
  ok,
  readyPods,
  startClient,
} from '../../harness/node/node.ts';
import { launchBrowser } from '../../harness/process/browser.ts';
import { eventually } from '../../harness/process/poll.ts';
import { builtBinaries } from '../../harness/trace/local-stack.ts';
import { HOTROD_SERVICES, type JaegerTrace, wholeDispatchTrace } from '../../harness/trace/traces.ts';

const OPERATOR_NS = 'website-system';

const website = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'web.example.com/v1',
  kind: 'Website',
  metadata: { name, namespace: OPERATOR_NS },
  spec,
});

async function websiteReady(name: string, replicas: number): Promise<any> {
  return eventually(
    `Website ${name} Ready with ${replicas} available replicas`,
    async () => {
      const w = await getJson(['website', name, '-n', OPERATOR_NS]);
      const ready = w.status?.conditions?.find((c: any) => c.type === 'Ready');
      return ready?.status === 'True' &&
        w.status.availableReplicas === replicas &&
        w.status.observedGeneration === w.metadata.generation
        ? w
        : undefined;
    },
    { timeoutMs: 180_000 },
  );
}

let browser: Browser;
beforeAll(async () => {
  browser = await launchBrowser();
});
afterAll(() => browser?.close());

/** The page at `url` as Chromium renders it: title text, background colour, whether a script ran. */
async function pageInBrowser(url: string): Promise<{ title: string; background: string; pwned: unknown }> {
  const page = await browser.newPage();
  try {
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);
    return {
      // biome-ignore lint/performance/useDomNodeTextContent: the text as the browser renders it is the point.
      title: await page.locator('#title').innerText(),
      background: (await page.evaluate('getComputedStyle(document.body).backgroundColor')) as string,
      pwned: await page.evaluate('window.pwned'),
    };
  } finally {
    await page.close();
  }
}

const HOSTILE_TITLE = '<script>window.pwned = true</script> & "quotes"';

describe('dist/website-operator/ applied as is', () => {
  let operatorPod: any;

  beforeAll(async () => {
    await ok(['apply', '-f', dist('website-operator')]);
    [operatorPod] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/name=website-operator', 1);
  });

  test('the operator pod runs from its image on the real node, Ready by its probes, with the token the kubelet mounts', async () => {
    expect(operatorPod.spec.nodeName).toBe(NODE);
    const status = operatorPod.status.containerStatuses[0];
    expect(status.image).toBe('ghcr.io/website-stack/website-operator:0.1.0');
    expect(status.state.running).toBeDefined();
    expect(status.restartCount).toBe(0);
    // The token is the kubelet's projected one (expiring, bound to the pod), read by the operator's client.
    expect(
      operatorPod.spec.volumes.some((v: any) => v.projected?.sources?.some((s: any) => s.serviceAccountToken)),
    ).toBe(true);
    const mounted = await ok([
      'exec',
      '-n',
      OPERATOR_NS,
      operatorPod.metadata.name,
      '--',
      'node',
      '-e',
      'const t = require("fs").readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/token", "utf8"); console.log(JSON.parse(Buffer.from(t.split(".")[1], "base64url"))["kubernetes.io"].pod.name)',
    ]);
    expect(mounted.trim()).toBe(operatorPod.metadata.name);
  });

  test('takes its Lease', async () => {
    const lease = await eventually('the operator holding its Lease', async () => {
      const l = await getJson(['lease', 'website-operator', '-n', OPERATOR_NS]);
      return l.spec.holderIdentity === operatorPod.metadata.name ? l : undefined;
    });
    expect(lease.spec.holderIdentity).toBe(operatorPod.metadata.name);
  });

  test('serves conversions through its Service: a v1beta1 Website is stored as v1 and read back as either', async () => {
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'web.example.com/v1beta1',
        kind: 'Website',
        metadata: { name: 'converted', namespace: OPERATOR_NS },
        spec: { heading: 'Converted', instances: 1, theme: { color: '#ff9800' } },
      }),
    });
    const v1 = await getJson(['websites.v1.web.example.com', 'converted', '-n', OPERATOR_NS]);
    expect(v1.apiVersion).toBe('web.example.com/v1');
    expect(v1.spec).toEqual({ title: 'Converted', replicas: 1, color: '#ff9800' });
    const v1beta1 = await getJson(['websites.v1beta1.web.example.com', 'converted', '-n', OPERATOR_NS]);
    expect(v1beta1.apiVersion).toBe('web.example.com/v1beta1');
    expect(v1beta1.spec).toEqual({ heading: 'Converted', instances: 1, theme: { color: '#ff9800' } });
    await websiteReady('converted', 1);
    await ok(['delete', 'website', 'converted', '-n', OPERATOR_NS, '--wait=true']);
  });
});

describe('a Website with 2 replicas', () => {
  let client: string;
  const clientNs = 'outside';

  beforeAll(async () => {
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify(website('hello', { title: HOSTILE_TITLE, color: '#4CAF50', replicas: 2 })),
    });
    client = await startClient(clientNs);
  });

  test('runs two nginx pods under Pod Security restricted, Ready on the real node', async () => {
    const pods = await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=hello', 2);
    const namespace = await getJson(['namespace', OPERATOR_NS]);
    expect(namespace.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const pod of pods) {
      expect(pod.spec.nodeName).toBe(NODE);
      expect(pod.status.containerStatuses.every((c: any) => c.state.running && c.restartCount === 0)).toBe(true);
    }
    const w = await websiteReady('hello', 2);
    expect(w.status.url).toBe('http://website-hello.website-system.svc.cluster.local');
  });

  test("serves its page through the Service's ClusterIP, shown literally on its colour in a browser", async () => {
    const ip = await clusterIP(OPERATOR_NS, 'website-hello');
    const page = await pageInBrowser(`http://${ip}/`);
    expect(page).toEqual({ title: HOSTILE_TITLE, background: 'rgb(76, 175, 80)', pwned: undefined });
  });

  test("serves it by the Service's DNS name (the status URL) to a pod in another namespace", async () => {
    const response = await httpGet(clientNs, client, 'website-hello.website-system.svc.cluster.local', 80);
    expect(response).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(response).toContain('&lt;script&gt;window.pwned = true&lt;/script&gt; &amp; &quot;quotes&quot;');
  });

  test('rolls out a replica change', async () => {
    await ok(['patch', 'website', 'hello', '-n', OPERATOR_NS, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=hello', 3);
    await websiteReady('hello', 3);
  });

  test('a container the kubelet restarts for a failed liveness probe comes back, and the Website with it', async () => {
    const [victim] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=hello', 3);
    // The probe GETs /: without the page nginx answers 404, the kubelet kills the container after
    // three failures, and the start script writes the page again.
    await exec(OPERATOR_NS, victim.metadata.name, 'rm "$SITE_DIR/html/index.html"');
    await eventually(
      'the kubelet restarting the container',
      async () =>
        (await getJson(['pod', victim.metadata.name, '-n', OPERATOR_NS])).status.containerStatuses[0].restartCount >= 1,
      { timeoutMs: 120_000 },
    );
    await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=hello', 3);
    await websiteReady('hello', 3);
    const events = await getJson([
      'events',
      '-n',
      OPERATOR_NS,
      '--field-selector',
      `involvedObject.name=${victim.metadata.name}`,
    ]);
    expect(events.items.some((e: any) => e.reason === 'Unhealthy' && /Liveness probe failed/.test(e.message))).toBe(
      true,
    );
  });

  describe('NetworkPolicies, enforced by kube-router', () => {
    test("a pod outside the package reaches the operator's webhook port (open to any source) but not its metrics port", async () => {
      const [operator] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/name=website-operator', 1);
      const ip = operator.status.podIP;
      // Both ports listen: seen from inside the pod, where no policy applies.
      const inside = await ok([
        'exec',
        '-n',
        OPERATOR_NS,
        operator.metadata.name,
        '--',
        'node',
        '-e',
        `const net = require("net"); Promise.all([9443, 8080].map((p) => new Promise((ok, no) => net.connect(p, "${ip}").on("connect", ok).on("error", no)))).then(() => console.log("both"), (e) => console.log(e.message)).finally(() => process.exit())`,
      ]);
      expect(inside.trim()).toBe('both');
      expect(await connects(clientNs, client, ip, 9443)).toBe(true);
      expect(await connects(clientNs, client, ip, 8080)).toBe(false);
    });

    test("the node's kube-router holds the NetworkPolicy controller only, and refuses a command line that enables another part", () => {
      const { 'kube-router': binary } = builtBinaries('kube-router');
      const run = spawnSync(binary, ['--run-firewall=true', '--run-router=true', '--run-service-proxy=false'], {
        encoding: 'utf8',
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('this kube-router build runs the NetworkPolicy controller only');
      expect(spawnSync(binary, ['--version'], { encoding: 'utf8' }).stderr).toContain('version v2.1.0');
    });

    test("Website pods, which the package's policies do not select, take traffic from anywhere", async () => {
      const [pod] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=hello', 3);
      expect(await connects(clientNs, client, pod.status.podIP, 8080)).toBe(true);
    });
  });
});

describe('dist/tracing-dev/ applied as is', () => {
  let trace: JaegerTrace;

  beforeAll(async () => {
    await ok(['apply', '-f', dist('tracing-dev')]);
    for (const name of ['jaeger', 'otel-collector', 'hotrod'])
      await readyPods('tracing', `app.kubernetes.io/name=${name}`, 1);
  });

  test("HotROD's request is traced through the Collector's pod to Jaeger's pod, found by their Service names, and the whole tree comes back from Jaeger's query API", async () => {
    const hotrod = await clusterIP('tracing', 'hotrod');
    const response = await fetch(`http://${hotrod}:8080/dispatch?customer=123`);
    expect(response.status).toBe(200);
    const jaeger = await clusterIP('tracing', 'jaeger');
    // As in production.test.ts: on a busy node the pods' batches can take a while to arrive.
    trace = await eventually(
      'the whole /dispatch trace in Jaeger',
      () => wholeDispatchTrace(`http://${jaeger}:16686`),
      {
        timeoutMs: 120_000,
      },
    );
    expect(new Set(trace.spans.map((s) => trace.processes[s.processID].serviceName))).toEqual(new Set(HOTROD_SERVICES));
    expect(trace.spans.filter((s) => !s.references.some((r) => r.refType === 'CHILD_OF'))).toHaveLength(1);
  });

  test("a pod outside the stack reaches Jaeger's UI (open to anyone) but not the Collector's metrics", async () => {
    const [collector] = await readyPods('tracing', 'app.kubernetes.io/name=otel-collector', 1);
    const [jaeger] = await readyPods('tracing', 'app.kubernetes.io/name=jaeger', 1);
    expect(await connects('outside', 'client', jaeger.status.podIP, 16686)).toBe(true);
    expect(await connects('outside', 'client', collector.status.podIP, 8888)).toBe(false);
    expect(await connects('outside', 'client', collector.status.podIP, 4318)).toBe(true);
  });
});

describe('dist/website-shell-operator/ in the operator’s place', () => {
  let shellPod: any;

  beforeAll(async () => {
    // One operator at a time: Websites first (the operator removes its finalizer), then the operator.
    await ok(['delete', 'websites', '--all', '-n', OPERATOR_NS, '--wait=true']);
    await ok(['delete', '-f', join(dist('website-operator'), 'website-operator.yaml'), '--wait=true']);
    await ok(['apply', '-f', dist('website-shell-operator')]);
    [shellPod] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/name=website-shell-operator', 1);
    await ok(['apply', '-f', '-'], { input: JSON.stringify(website('shell', { title: 'Kept by bash', replicas: 2 })) });
  });

  test('the shell operator runs from its image, Ready by its heartbeat probes, and keeps a Website of 2 replicas', async () => {
    expect(shellPod.spec.nodeName).toBe(NODE);
    expect(shellPod.status.containerStatuses[0].image).toBe(`docker.io/${CLIENT_IMAGE}`);
    await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=shell', 2, 120_000);
    const ip = await clusterIP(OPERATOR_NS, 'website-shell');
    const page = await pageInBrowser(`http://${ip}/`);
    expect(page.title).toBe('Kept by bash');
  });

  test('rolls out a replica change', async () => {
    await ok(['patch', 'website', 'shell', '-n', OPERATOR_NS, '--type=merge', '-p', '{"spec":{"replicas":1}}']);
    await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=shell', 1, 120_000);
  });

  test('reaches the API server and DNS, and nothing else', async () => {
    const name = shellPod.metadata.name;
    const resolved = await exec(OPERATOR_NS, name, 'getent hosts kubernetes.default.svc.cluster.local');
    expect(resolved).toMatch(/^10\.0\.0\.1\s/);
    expect(await connects(OPERATOR_NS, name, '10.0.0.1', 443)).toBe(true);
    const [page] = await readyPods(OPERATOR_NS, 'app.kubernetes.io/instance=shell', 1);
    expect(await connects(OPERATOR_NS, name, page.status.podIP, 8080)).toBe(false);
    const [jaeger] = await readyPods('tracing', 'app.kubernetes.io/name=jaeger', 1);
    expect(await connects(OPERATOR_NS, name, jaeger.status.podIP, 16686)).toBe(false);
  });
});

test('nothing the kubelet ran crash-looped', async () => {
  const pods = (await getJson(['pods', '-A'])).items;
  const restarted = pods.flatMap((p: any) =>
    (p.status.containerStatuses ?? [])
      .filter((c: any) => c.restartCount > 0 && p.metadata.labels?.['app.kubernetes.io/instance'] !== 'hello')
      .map((c: any) => `${p.metadata.namespace}/${p.metadata.name}/${c.name}: ${c.restartCount}`),
  );
  expect(restarted).toEqual([]);
  await kubectl(['delete', 'namespace', 'outside', '--wait=false']);
});
