// `npm run bench:kro-check [-- --keep-cluster]`: kro really does the Website's job on the bench's
// local cluster before the benchmark times it. A Website instance of the ResourceGraphDefinition
// (bench/kro.ts) gets the Deployment and Service our operator would render for the same spec, kro's
// Ready condition follows the Deployment, an edit reaches the Deployment, and a delete removes the
// children. Not part of `npm test`: it needs the kro binary (scripts/binaries.sh kro, minutes to
// build cold), and it is what `npm run bench -- --peer ./bench/kro.ts` relies on.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, test } from 'node:test';
import { parseArgs } from 'node:util';
import type { WebsiteSpec } from '../harness/cluster/website.ts';
import { KRO_WEBSITES, KRO_WEBSITES_NS } from '../harness/kro/kro.ts';
import { sumMetric } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { DEFAULT_COLOR } from '../lib/website/schema.ts';
import { DEPLOYMENTS, type KubeObject, SERVICES } from '../operator/src/controller/kube-api.ts';
import { renderedKind, renderWorkload } from '../operator/src/reconciler/render.ts';
import { AUDIT_LOG, type BenchCluster, clusterDown, clusterUp, emptyNamespace } from './cluster.ts';
import type { ControllerProcess } from './controller-process.ts';
import { kroPeer } from './kro.ts';
import type { PeerProcess } from './peer.ts';

const { values } = parseArgs({ options: { 'keep-cluster': { type: 'boolean', default: false } } });
const log = (message: string) =>
  process.stderr.write(`[kro-check] ${new Date().toISOString().slice(11, 19)} ${message}\n`);
const peer = kroPeer();
const ns = KRO_WEBSITES_NS;

let cluster: BenchCluster;
let kro: PeerProcess;

const get = (type: typeof DEPLOYMENTS, name: string) => cluster.admin.get<KubeObject>(type, { namespace: ns, name });

/** The object as the API returns it, once `done` holds for it; fails with what was last seen. */
async function objectOnce(
  type: typeof DEPLOYMENTS,
  name: string,
  what: string,
  done: (object: KubeObject | undefined) => boolean,
): Promise<KubeObject | undefined> {
  let last: KubeObject | undefined;
  await eventually(
    what,
    async () => {
      last = await get(type, name);
      return done(last);
    },
    {
      timeoutMs: 120_000,
      intervalMs: 100,
      progress: () => `last seen: ${JSON.stringify(last?.status ?? last ?? 'nothing')}`,
      stopOnError: true,
    },
  );
  return last;
}

/** What our operator renders for a Website of `spec`, to compare kro's children with. */
function ours(name: string, spec: WebsiteSpec) {
  return renderWorkload({
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name, namespace: ns, uid: 'ours', generation: 1 },
    spec: { ...spec },
  });
}

/** The Deployment's and Service's fields our renderer sets, minus the two kro sets its own way (bench/kro.ts kroTemplates). */
function expected(name: string, spec: WebsiteSpec) {
  const rendered = ours(name, spec);
  const deployment = renderedKind(rendered, 'Deployment');
  const service = renderedKind(rendered, 'Service');
  const kroLabels = (labels: Record<string, string>) => ({ ...labels, 'app.kubernetes.io/managed-by': 'kro' });
  const d = deployment.spec as { template: { metadata: { labels: Record<string, string> } } };
  return {
    deploymentLabels: kroLabels(deployment.metadata!.labels!),
    deploymentSpec: { ...d, template: { ...d.template, metadata: { labels: kroLabels(d.template.metadata.labels) } } },
    serviceLabels: kroLabels(service.metadata!.labels!),
    serviceSpec: service.spec as Record<string, unknown>,
  };
}

/** `actual` holds every field of `wanted` with the same value (the API server adds defaults besides). */
function assertContains(actual: unknown, wanted: unknown, path = ''): void {
  if (wanted && typeof wanted === 'object') {
    assert.ok(actual && typeof actual === 'object', `${path || 'the object'} is missing`);
    if (Array.isArray(wanted)) {
      assert.ok(
        Array.isArray(actual) && actual.length === wanted.length,
        `${path} has ${Array.isArray(actual) ? actual.length : 'no'} items, wanted ${wanted.length}`,
      );
      for (const [i, item] of wanted.entries()) assertContains((actual as unknown[])[i], item, `${path}[${i}]`);
    } else {
      for (const [key, value] of Object.entries(wanted))
        assertContains((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
    }
  } else {
    assert.deepEqual(actual, wanted, `${path}: ${JSON.stringify(actual)} instead of ${JSON.stringify(wanted)}`);
  }
}

async function assertChildren(name: string, spec: WebsiteSpec): Promise<void> {
  const want = expected(name, spec);
  const deployment = await get(DEPLOYMENTS, `website-${name}`);
  const service = await get(SERVICES, `website-${name}`);
  assert.ok(deployment && service, `Deployment and Service website-${name} exist`);
  assertContains(deployment.metadata!.labels, want.deploymentLabels, `Deployment website-${name} .metadata.labels`);
  assertContains(deployment.spec, want.deploymentSpec, `Deployment website-${name} .spec`);
  assertContains(service.metadata!.labels, want.serviceLabels, `Service website-${name} .metadata.labels`);
  assertContains(service.spec, want.serviceSpec, `Service website-${name} .spec`);
}

const websiteGet = (name: string) => cluster.admin.get<KubeObject>(KRO_WEBSITES, { namespace: ns, name });

interface KroWebsiteStatus {
  availableReplicas?: number;
  url?: string;
}

async function ready(name: string): Promise<KubeObject & { status?: KroWebsiteStatus }> {
  let last: KubeObject | undefined;
  await eventually(
    `kro Website ${name} to be Ready`,
    async () => {
      last = await websiteGet(name);
      return peer.ready(last ?? {});
    },
    {
      timeoutMs: 120_000,
      intervalMs: 100,
      progress: () => `status: ${JSON.stringify(last?.status)}`,
      stopOnError: true,
    },
  );
  return last!;
}

before(async () => {
  cluster = await clusterUp({ pods: 40, extraArgs: [], log });
  await peer.install({ cluster, log });
  // What an interrupted run left; kro's API exists once install has returned.
  await emptyNamespace(cluster, ns, KRO_WEBSITES);
  kro = await peer.start({ cluster, log });
  log(`kro is running (pid ${kro.pid}, ${kro.metricsUrl})`);
});

after(async () => {
  await kro?.stop();
  if (cluster) await emptyNamespace(cluster, ns, KRO_WEBSITES);
  if (!values['keep-cluster']) await clusterDown();
});

test('a Website gets the Deployment and Service our operator renders, and turns Ready with the Deployment', async () => {
  const spec: WebsiteSpec = { title: 'Hello <b>kro</b> & "friends"', replicas: 2, color: '#E91E63' };
  const created = await cluster.admin.create(KRO_WEBSITES, peer.website('hello', spec));
  await objectOnce(DEPLOYMENTS, peer.deploymentName('hello'), 'Deployment website-hello', (d) => d !== undefined);
  await objectOnce(SERVICES, 'website-hello', 'Service website-hello', (s) => s !== undefined);
  await assertChildren('hello', spec);
  const website = await ready('hello');
  assert.equal(website.metadata!.uid, created.metadata!.uid);
  assert.deepEqual(website.status?.availableReplicas, 2);
  assert.equal(website.status?.url, `http://website-hello.${ns}.svc.cluster.local`);
  assert.ok(website.metadata!.finalizers?.length, 'kro holds a finalizer on the Website');
});

test('colour defaults to #2196F3, and the text colour kro computes in CEL matches ours on every kind of colour', async () => {
  // Short and long forms, both cases, and greys either side of the black/white threshold.
  const colors = [undefined, '#fff', '#000000', '#767676', '#757575', '#aBc', '#FFEB3B', '#3F51B5'];
  const specs = colors.map((color, i) => ({
    name: `colour-${i}`,
    spec: { title: `Colour ${color ?? 'default'}`, replicas: 1, color: color ?? DEFAULT_COLOR },
  }));
  for (const [i, { name, spec }] of specs.entries()) {
    const object = peer.website(name, spec);
    if (colors[i] === undefined) delete (object.spec as { color?: string }).color;
    await cluster.admin.create(KRO_WEBSITES, object);
  }
  for (const { name, spec } of specs) {
    await objectOnce(DEPLOYMENTS, `website-${name}`, `Deployment website-${name}`, (d) => d !== undefined);
    await assertChildren(name, spec);
  }
});

test('an edit of title, replicas and colour reaches the Deployment, and Ready follows the new generation', async () => {
  const spec: WebsiteSpec = { title: 'Edited', replicas: 4, color: '#4CAF50' };
  await cluster.admin.patch(KRO_WEBSITES, { namespace: ns, name: 'hello' }, 'merge', peer.edit(spec));
  await objectOnce(
    DEPLOYMENTS,
    'website-hello',
    'Deployment website-hello at 4 replicas',
    (d) => (d?.spec as { replicas?: number } | undefined)?.replicas === 4,
  );
  await assertChildren('hello', spec);
  const website = await ready('hello');
  // During the rollout a surge pod can be available beside the four: Ready (kro's rule and ours)
  // asks for at least spec.replicas.
  assert.ok(
    (website.status?.availableReplicas ?? 0) >= 4,
    `availableReplicas ${website.status?.availableReplicas}, expected at least 4`,
  );
});

test('a delete removes the Website and its Deployment and Service', async () => {
  await cluster.admin.delete(KRO_WEBSITES, { namespace: ns, name: 'hello' });
  await objectOnce(DEPLOYMENTS, 'website-hello', 'Deployment website-hello to be deleted', (d) => d === undefined);
  await objectOnce(SERVICES, 'website-hello', 'Service website-hello to be deleted', (s) => s === undefined);
  await eventually('kro Website hello to be gone', async () => (await websiteGet('hello')) === undefined, {
    timeoutMs: 120_000,
    intervalMs: 100,
    stopOnError: true,
  });
});

test('kro created the children as its ServiceAccount, and its queue metrics count the instances', async () => {
  // The bench cluster's audit log records every ServiceAccount's requests (harness/cluster/audit-policy.yaml).
  const events = (await readFile(AUDIT_LOG, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map(
      (line) =>
        JSON.parse(line) as {
          user?: { username?: string };
          verb?: string;
          objectRef?: { resource?: string; namespace?: string; name?: string };
        },
    );
  const creates = events
    .filter((e) => e.verb === 'create' || e.verb === 'patch')
    .filter((e) => e.objectRef?.namespace === ns && e.objectRef?.name === 'website-hello');
  assert.ok(creates.length > 0, `the audit log has no write of website-hello in ${ns}`);
  assert.deepEqual([...new Set(creates.map((e) => e.user?.username))], [peer.user]);
  const text = await (kro as ControllerProcess).metrics();
  assert.ok(
    sumMetric(text, 'workqueue_queue_duration_seconds_count', peer.queueWait.labels) >= 10,
    'the dynamic controller queue handed out at least one item per Website',
  );
  // For the reader of the benchmark: what the RGD's expressions (the page's escaping and colour among them) cost kro.
  const cel = {
    count: sumMetric(text, 'cel_expr_eval_duration_seconds_count'),
    seconds: sumMetric(text, 'cel_expr_eval_duration_seconds_sum'),
  };
  log(
    `kro evaluated ${cel.count} CEL expressions in ${(cel.seconds * 1000).toFixed(1)} ms (${((cel.seconds * 1e6) / Math.max(cel.count, 1)).toFixed(0)} µs each); process CPU ${sumMetric(text, 'process_cpu_seconds_total')} s`,
  );
});
