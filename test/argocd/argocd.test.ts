// dist/ synced by a real Argo CD (harness/argocd/argocd.ts: the release scripts/binaries.sh builds,
// started against a cluster of this project's own), exactly as docs/use/dist-and-argocd.md tells users: its
// ApplicationSet with only repoURL (and, here, the revision under test) changed, its health check
// in argocd-cm, its way of switching alternatives. The operator runs as a process beside the
// cluster, as in the other cluster tests (kwok runs no container): the bundle, as its
// ServiceAccount, serving the conversion webhook and writing the CRD's caBundle as it does in a pod.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { type ArgoCd, type GitServer, serveGitRepository, startArgoCd } from '../../harness/argocd/argocd.ts';
import { ARGOCD_CLUSTER, ROOT } from '../../harness/cluster/env.ts';
import { TestHostAddress } from '../../harness/cluster/host-address.ts';
import { commandsFor } from '../../harness/cluster/kube.ts';
import { serviceAccountKubeconfig } from '../../harness/cluster/kubectl.ts';
import { localEndpointRbacManifests, OPERATOR_NS } from '../../harness/operator/operator-manifests.ts';
import { OperatorProcess } from '../../harness/operator/operator-process.ts';
import { type ShellOperatorProcess, startShellOperator } from '../../harness/operator/shell-operator.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { ArgoSync } from '../../lib/argocd.ts';
import { READY_REASONS } from '../../operator/src/reconciler/status.ts';

type Manifest = Record<string, any>;
const { kubectl, ok, getJson } = commandsFor(ARGOCD_CLUSTER);
const page = readFileSync(join(ROOT, 'docs/use/dist-and-argocd.md'), 'utf8');
const NS = 'argocd';
// The application controller's resync period here (`--app-resync`; Argo CD's default is 120 s plus jitter).
const RESYNC_SECONDS = 15;

/** Every ```yaml block of that page, parsed (all documents). */
function pageManifests(): Manifest[] {
  return [...page.matchAll(/```yaml\n([\s\S]*?)```/g)]
    .flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS() as Manifest))
    .filter(Boolean);
}

/** The page's ApplicationSet, pointed at `repoUrl` at `revision`, with `folders` replacing elements' folders by name. */
function pageApplicationSet(repoUrl: string, revision: string, folders: Record<string, string> = {}): Manifest {
  const found = pageManifests().find((m) => m.kind === 'ApplicationSet');
  if (!found) throw new Error('docs/use/dist-and-argocd.md has no ApplicationSet');
  const set = structuredClone(found);
  set.spec.template.spec.source.repoURL = repoUrl;
  set.spec.template.spec.source.targetRevision = revision;
  for (const element of set.spec.generators[0].list.elements)
    if (folders[element.name]) element.folder = folders[element.name];
  return set;
}

/** The objects of a dist/ folder, as (kind, namespace, name) keys. */
function distObjects(folder: string, namespace: string): Set<string> {
  const keys = new Set<string>();
  for (const file of readdirSync(join(ROOT, 'dist', folder)))
    for (const document of parseAllDocuments(readFileSync(join(ROOT, 'dist', folder, file), 'utf8'))) {
      const object = document.toJS() as Manifest | null;
      if (!object) continue;
      const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding'].includes(
        object.kind,
      );
      keys.add(
        `${object.kind}/${clusterScoped ? '' : (object.metadata.namespace ?? namespace)}/${object.metadata.name}`,
      );
    }
  return keys;
}

/** The sync wave of each object of a dist/ folder, by `kind/name`. */
function distWaves(folder: string): Map<string, number> {
  const waves = new Map<string, number>();
  for (const file of readdirSync(join(ROOT, 'dist', folder)))
    for (const document of parseAllDocuments(readFileSync(join(ROOT, 'dist', folder, file), 'utf8'))) {
      const object = document.toJS() as Manifest | null;
      if (object)
        waves.set(
          `${object.kind}/${object.metadata.name}`,
          Number(object.metadata.annotations[ArgoSync.WAVE_ANNOTATION]),
        );
    }
  return waves;
}

const application = (name: string): Promise<Manifest> => getJson(['application', name, '-n', NS]);

/**
 * The objects Argo CD's application controller created, as `Kind/name` keys in the order the API
 * server received the creates (its audit log records every ServiceAccount's requests). An
 * Application's operationState holds only its last sync, which a self-heal sync of one object right
 * after the first may already have replaced; the audit log keeps the first.
 */
function createdByArgoCd(kinds: readonly string[]): string[] {
  const plural = (kind: string) => `${kind.toLowerCase().replace(/y$/, 'ie')}s`;
  const kindOf = new Map(kinds.map((kind) => [plural(kind), kind]));
  const creates = readFileSync(cluster.auditLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Manifest)
    .filter(
      (e) =>
        e.user?.username === `system:serviceaccount:${NS}:argocd-application-controller` &&
        e.verb === 'create' &&
        e.responseStatus?.code < 300 &&
        !e.objectRef?.subresource &&
        kindOf.has(e.objectRef?.resource),
    )
    .sort((a, b) => Date.parse(a.requestReceivedTimestamp) - Date.parse(b.requestReceivedTimestamp));
  return [...new Set(creates.map((e) => `${kindOf.get(e.objectRef.resource)}/${e.objectRef.name}`))];
}

/** Application `name` once it is Synced to `dist/<folder>` and its sync operation has succeeded. */
const syncedTo = (name: string, folder: string, timeoutMs = 180_000): Promise<Manifest> =>
  eventually(
    `${name} to sync dist/${folder}`,
    async () => {
      const app = await application(name);
      return (
        app.status?.sync?.status === 'Synced' &&
        app.status.sync.comparedTo?.source?.path === `dist/${folder}` &&
        app.status.operationState?.phase === 'Succeeded' &&
        app
      );
    },
    { timeoutMs, intervalMs: 1000 },
  );

/** Waits until each Application is Synced and Healthy, at the revision wanted; returns them. */
async function syncedAndHealthy(names: readonly string[], timeoutMs = 300_000): Promise<Manifest[]> {
  let last: Manifest[] = [];
  return eventually(
    `Applications ${names.join(', ')} to be Synced and Healthy`,
    async () => {
      last = await Promise.all(names.map(application));
      return last.every((a) => a.status?.sync?.status === 'Synced' && a.status?.health?.status === 'Healthy') && last;
    },
    {
      timeoutMs,
      intervalMs: 1000,
      progress: () =>
        last
          .map(
            (a) =>
              `${a.metadata.name}: ${a.status?.sync?.status}/${a.status?.health?.status} ${a.status?.operationState?.phase ?? ''} ${a.status?.operationState?.message ?? ''} ${JSON.stringify(a.status?.conditions ?? [])}`,
          )
          .join('; '),
    },
  );
}

/** The health Argo CD reports for one resource of an Application. */
async function resourceHealth(app: string, kind: string, name: string): Promise<{ status?: string; message?: string }> {
  const resource = ((await application(app)).status?.resources ?? []).find(
    (r: Manifest) => r.kind === kind && r.name === name,
  );
  return resource?.health ?? {};
}

/**
 * Application `app`, synced automatically from a repository of its own (served as any remote is)
 * that holds one Website, `name` in `namespace`; resolves with that repository's server.
 */
async function oneWebsiteApplication(app: string, name: string, namespace: string, title: string): Promise<GitServer> {
  const repo = await serveGitRepository(join(ROOT, '.cluster', 'test-argocd-fixtures', app), {
    files: {
      'website.yaml': JSON.stringify({
        apiVersion: 'web.example.com/v1',
        kind: 'Website',
        metadata: { name, namespace },
        spec: { title, replicas: 1 },
      }),
    },
  });
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: app, namespace: NS },
      spec: {
        project: 'default',
        source: { repoURL: repo.url, targetRevision: 'HEAD', path: '.' },
        destination: { server: 'https://kubernetes.default.svc', namespace },
        syncPolicy: { automated: { prune: true } },
      },
    }),
  });
  return repo;
}

let argocd: ArgoCd;
let revision: string;
let operator: OperatorProcess | undefined;
let shellOperator: ShellOperatorProcess | undefined;
let host: TestHostAddress | undefined;
const cluster = ARGOCD_CLUSTER;

beforeAll(async () => {
  revision = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  // A comparison every 15 s: the no-flapping window below sees several.
  argocd = await startArgoCd({
    cluster,
    dir: join(ROOT, '.cluster', 'test-argocd-state'),
    repository: ROOT,
    appResyncSeconds: RESYNC_SECONDS,
  });
  // The page's health check, applied as the page says.
  const configMap = pageManifests().find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'argocd-cm');
  expect(configMap?.data).toEqual(ArgoSync.websiteHealthCheck());
  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify(configMap) });
}, 600_000);

afterAll(async () => {
  await operator?.stop();
  await shellOperator?.stop();
  host?.close();
  await argocd?.stop();
}, 120_000);

describe('the ApplicationSet of docs/use/dist-and-argocd.md on a real Argo CD', () => {
  test('every Application reaches Synced and Healthy: the CRD synced before the operator, the Websites created once the CRD was established, and Progressing until the operator reports their status', async () => {
    await ok(['apply', '-f', '-'], { input: JSON.stringify(pageApplicationSet(argocd.repoUrl, revision)) });
    await syncedAndHealthy(['website-api', 'tracing']);
    // The objects in the order Argo CD created them: the destination namespace first (Argo CD
    // creates it before its dry-run, whatever its wave), then wave by wave as dist/ annotates
    // them, so the CRD (-1) before the operator (0).
    const waves = distWaves('website-operator');
    const kinds = [...new Set([...waves.keys()].map((key) => key.split('/')[0]))];
    const synced = createdByArgoCd(kinds).filter((key) => waves.has(key));
    expect(synced[0]).toBe(`Namespace/${OPERATOR_NS}`);
    const inOrder = synced.slice(1).map((key) => waves.get(key));
    expect(inOrder).toEqual([...inOrder].sort((a, b) => a! - b!));
    expect(synced.indexOf('CustomResourceDefinition/websites.web.example.com')).toBeGreaterThanOrEqual(0);
    expect(synced.indexOf('CustomResourceDefinition/websites.web.example.com')).toBeLessThan(
      synced.indexOf('Deployment/website-operator'),
    );

    // No operator yet: the Websites exist and Argo CD says they wait for it.
    for (const name of ['hello', 'docs'])
      expect(
        await eventually(`Website ${name} to be Progressing`, async () => {
          const health = await resourceHealth('website-samples', 'Website', name);
          return health.status === 'Progressing' && health;
        }),
      ).toEqual({ status: 'Progressing', message: "Waiting for the operator to report the Website's status" });
    const crd = await getJson(['crd', 'websites.web.example.com']);
    const established = crd.status.conditions.find((c: Manifest) => c.type === 'Established').lastTransitionTime;
    for (const name of ['hello', 'docs']) {
      const website = await getJson(['website', name, '-n', OPERATOR_NS]);
      expect(Date.parse(website.metadata.creationTimestamp)).toBeGreaterThanOrEqual(Date.parse(established));
    }

    // The operator, as its ServiceAccount (which Argo CD just created), serving the conversion
    // webhook through the Service dist/ ships, as in a pod.
    await ok(['apply', '--server-side', '-f', '-'], {
      input: localEndpointRbacManifests()
        .map((m) => JSON.stringify(m))
        .join('\n'),
    });
    host = new TestHostAddress();
    operator = await OperatorProcess.start('argocd-test', await serviceAccountKubeconfig(cluster), {
      WEBHOOK_ENABLED: 'true',
      WEBHOOK_PORT: String(await freePort()),
      WEBHOOK_ADVERTISE_ADDRESS: host.address,
      LEASE_DURATION_SECONDS: '4',
      RENEW_DEADLINE_SECONDS: '3',
      RETRY_PERIOD_SECONDS: '0.5',
    });
    await syncedAndHealthy(['website-api', 'website-samples', 'tracing']);
    for (const name of ['hello', 'docs'])
      expect(await resourceHealth('website-samples', 'Website', name)).toEqual({
        status: 'Healthy',
        message: expect.stringMatching(/^\d+\/\d+ replicas available$/),
      });
  }, 600_000);

  test('no flapping: for a minute, four comparisons of each Application with the cluster, while the operator holds the caBundle it wrote and writes status, no new sync and nothing OutOfSync', async () => {
    const crd = await getJson(['crd', 'websites.web.example.com']);
    expect(Buffer.from(crd.spec.conversion.webhook.clientConfig.caBundle, 'base64').toString()).toContain(
      'BEGIN CERTIFICATE',
    );
    const names = ['website-api', 'website-samples', 'tracing'];
    const before = await Promise.all(names.map(application));
    // Status writes during the window: a hand-scaled child Deployment (drift, which Argo CD does not
    // track: the operator owns it) put back by the operator, whose status follows.
    const statusBefore = (await getJson(['website', 'hello', '-n', OPERATOR_NS])).metadata.resourceVersion;
    await ok(['scale', 'deployment', 'website-hello', '-n', OPERATOR_NS, '--replicas=5']);
    const end = Date.now() + 4 * RESYNC_SECONDS * 1000;
    const seen = new Set<string>();
    // Each Application's comparisons in the window (status.reconciledAt, set by each one).
    const compared = new Map(names.map((n) => [n, new Set<string>()]));
    while (Date.now() < end) {
      for (const app of await Promise.all(names.map(application))) {
        seen.add(`${app.metadata.name} ${app.status.sync.status}`);
        compared.get(app.metadata.name)!.add(app.status.reconciledAt);
        for (const r of app.status.resources ?? [])
          if (r.status !== 'Synced') seen.add(`${app.metadata.name} ${r.kind}/${r.name} ${r.status}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
    expect([...seen].sort()).toEqual(names.map((n) => `${n} Synced`).sort());
    // Argo CD did compare, more than once each: a window without comparisons would prove nothing.
    for (const [name, times] of compared) expect([name, times.size >= 3]).toEqual([name, true]);
    const after = await Promise.all(names.map(application));
    for (const [i, app] of after.entries()) {
      expect(app.status.operationState.startedAt).toBe(before[i].status.operationState.startedAt);
      expect(app.status.history?.length).toBe(before[i].status.history?.length);
    }
    // The operator put the Deployment back and wrote the Website's status meanwhile.
    const hello = await getJson(['website', 'hello', '-n', OPERATOR_NS]);
    expect(hello.metadata.resourceVersion).not.toBe(statusBefore);
    expect((await getJson(['deployment', 'website-hello', '-n', OPERATOR_NS])).spec.replicas).toBe(hello.spec.replicas);
  }, 300_000);

  test('self-heal: a hand edit of the operator Deployment is reverted; a deleted Service returns', async () => {
    // A value dist/ sets: self-heal reverts what differs from the manifest (a field the manifest
    // does not set, such as an added variable, Argo CD's three-way diff leaves alone).
    await ok(['set', 'env', 'deployment/website-operator', '-n', OPERATOR_NS, 'LEADER_ELECTION=false']);
    const service = await getJson(['service', 'website-operator-webhook', '-n', OPERATOR_NS]);
    await ok(['delete', 'service', 'website-operator-webhook', '-n', OPERATOR_NS]);
    await eventually(
      'the hand edit to be reverted',
      async () =>
        (
          await getJson(['deployment', 'website-operator', '-n', OPERATOR_NS])
        ).spec.template.spec.containers[0].env.find((e: Manifest) => e.name === 'LEADER_ELECTION').value === 'true',
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    const restored = await eventually(
      'the Service to return',
      async () => {
        const found = await kubectl(['get', 'service', 'website-operator-webhook', '-n', OPERATOR_NS, '-o', 'json']);
        return found.code === 0 && JSON.parse(found.stdout);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    expect(restored.metadata.uid).not.toBe(service.metadata.uid);
    await syncedAndHealthy(['website-api']);
  }, 300_000);

  test("a Website whose reconcile fails is Degraded, with the operator's message", async () => {
    // One Website whose Deployment's name is taken by a Deployment the operator does not own.
    await ok(['create', 'deployment', 'website-taken', '-n', OPERATOR_NS, '--image=nginx']);
    const repo = await oneWebsiteApplication('degraded', 'taken', OPERATOR_NS, 'Taken');
    try {
      const health = await eventually(
        'Website taken to be Degraded',
        async () => {
          const h = await resourceHealth('degraded', 'Website', 'taken');
          return h.status === 'Degraded' && h;
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      expect(health.message).toBe(
        'Deployment website-taken already exists and is not owned by Website taken: delete or rename that Deployment, or rename the Website',
      );
      expect((await application('degraded')).status.health.status).toBe('Degraded');
      // Fixed: the foreign Deployment gone, the Website recovers.
      await ok(['delete', 'deployment', 'website-taken', '-n', OPERATOR_NS]);
      await syncedAndHealthy(['degraded']);
      await ok(['delete', 'application', 'degraded', '-n', NS]);
    } finally {
      await repo.stop();
    }
  }, 300_000);

  test("with the operator's Gateway: a Website whose route is refused, whose host is taken or not allowed is Degraded with the operator's message; one whose route is pending is Progressing", async () => {
    // In a namespace the operator does not watch, so that the status is the test's to write, as the
    // operator writes it (Ready False, the reason, the message, the generation observed): what Argo
    // CD makes of each reason is the health check's part, run here by Argo CD itself.
    const namespace = 'argocd-route-reasons';
    await ok(['create', 'namespace', namespace]);
    const repo = await oneWebsiteApplication('route-reasons', 'shop', namespace, 'Shop');
    try {
      const synced = await eventually('Website shop synced', async () => {
        const found = await kubectl(['get', 'website', 'shop', '-n', namespace, '-o', 'json']);
        return found.code === 0 && JSON.parse(found.stdout);
      });
      const cases = [
        [
          READY_REASONS.routeNotAccepted,
          'Degraded',
          'Gateway gateway-system/public does not serve HTTPRoute website-shop: NotAllowedByListeners: no listener admits the namespace',
        ],
        [
          READY_REASONS.hostConflict,
          'Degraded',
          `host shop.example.com is already served for Website ${namespace}/first, which asked for it first: set another spec.host`,
        ],
        [
          READY_REASONS.hostNotAllowed,
          'Degraded',
          'spec.host shop.example.org is not allowed: it must be under example.com (the hosts this operator allows)',
        ],
        [
          READY_REASONS.routePending,
          'Progressing',
          'Waiting for Gateway gateway-system/public to accept HTTPRoute website-shop',
        ],
      ] as const;
      for (const [reason, status, message] of cases) {
        const condition = {
          type: 'Ready',
          status: 'False',
          reason,
          message,
          observedGeneration: synced.metadata.generation,
          lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        };
        await ok([
          'patch',
          'website',
          'shop',
          '-n',
          namespace,
          '--subresource=status',
          '--type=merge',
          '-p',
          JSON.stringify({ status: { conditions: [condition] } }),
        ]);
        const health = await eventually(
          `Website shop ${status} for ${reason}`,
          async () => {
            const h = await resourceHealth('route-reasons', 'Website', 'shop');
            return h.status === status && h.message === message && h;
          },
          { timeoutMs: 120_000, intervalMs: 1000 },
        );
        expect(health).toEqual({ status, message });
      }
      await ok(['delete', 'application', 'route-reasons', '-n', NS]);
    } finally {
      await repo.stop();
      await kubectl(['delete', 'namespace', namespace, '--wait=false']);
    }
  }, 300_000);

  test('switching to the shell operator as docs/use/dist-and-argocd.md says: the old operator pruned, the CRD, the namespace and every Website kept, and the shell operator serves them', async () => {
    const uids = async () => ({
      crd: (await getJson(['crd', 'websites.web.example.com'])).metadata.uid,
      namespace: (await getJson(['namespace', OPERATOR_NS])).metadata.uid,
      websites: Object.fromEntries(
        (await getJson(['websites', '-n', OPERATOR_NS])).items.map((w: Manifest) => [w.metadata.name, w.metadata.uid]),
      ),
    });
    const before = await uids();
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify(pageApplicationSet(argocd.repoUrl, revision, { 'website-api': 'website-shell-operator' })),
    });
    await eventually(
      'the operator Deployment to be pruned',
      async () => (await kubectl(['get', 'deployment', 'website-operator', '-n', OPERATOR_NS])).code !== 0,
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    // Its pod would be gone with it.
    await operator?.stop();
    operator = undefined;
    const api = await syncedTo('website-api', 'website-shell-operator');
    expect(await uids()).toEqual(before);
    // What is left of website-api is exactly the shell operator's folder: nothing of the old one.
    const tracked = new Set(api.status.resources.map((r: Manifest) => `${r.kind}/${r.namespace ?? ''}/${r.name}`));
    expect(tracked).toEqual(distObjects('website-shell-operator', OPERATOR_NS));
    for (const gone of [...distObjects('website-operator', OPERATOR_NS)].filter((k) => !tracked.has(k))) {
      const [kind, namespace, name] = gone.split('/');
      const args = ['get', kind.toLowerCase(), name, ...(namespace ? ['-n', namespace] : [])];
      expect(`${gone}: ${(await kubectl(args)).code === 0 ? 'still there' : 'pruned'}`).toBe(`${gone}: pruned`);
    }

    // The shell operator serves the Websites Argo CD kept: a child deleted is made again, from the
    // Website's spec. (Not a hand edit of a Website: Argo CD's self-heal reverts that one, as it
    // should; Websites synced from git change in git.)
    shellOperator = startShellOperator(cluster, OPERATOR_NS, { INTERVAL: '1' });
    const hello = await getJson(['website', 'hello', '-n', OPERATOR_NS]);
    const child = await getJson(['deployment', 'website-hello', '-n', OPERATOR_NS]);
    await ok(['delete', 'deployment', 'website-hello', '-n', OPERATOR_NS, '--wait=true']);
    const remade = await eventually(
      'the shell operator to make website-hello again',
      async () => {
        const found = await kubectl(['get', 'deployment', 'website-hello', '-n', OPERATOR_NS, '-o', 'json']);
        const deployment = found.code === 0 && JSON.parse(found.stdout);
        return deployment && deployment.metadata.uid !== child.metadata.uid && deployment;
      },
      {
        timeoutMs: 120_000,
        intervalMs: 500,
        progress: () =>
          `its log ends:\n${shellOperator?.lines
            .slice(-10)
            .map((l) => l.text)
            .join('\n')}`,
      },
    );
    expect(remade.spec.replicas).toBe(hello.spec.replicas);
    expect(remade.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Website', name: 'hello', uid: before.websites.hello }),
    ]);
  }, 600_000);

  test('switching the trace stack to production on Cassandra leaves no object of the development stack behind', async () => {
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify(
        pageApplicationSet(argocd.repoUrl, revision, {
          'website-api': 'website-shell-operator',
          tracing: 'tracing-production-cassandra',
        }),
      ),
    });
    const app = await syncedTo('tracing', 'tracing-production-cassandra', 300_000);
    const wanted = distObjects('tracing-production-cassandra', 'tracing');
    expect(new Set(app.status.resources.map((r: Manifest) => `${r.kind}/${r.namespace ?? ''}/${r.name}`))).toEqual(
      wanted,
    );
    // Every object in the namespace that Argo CD tracks as the tracing Application's is wanted.
    const leftovers: string[] = [];
    for (const kind of [
      'deployments',
      'services',
      'configmaps',
      'networkpolicies',
      'serviceaccounts',
      'cronjobs',
      'jobs',
      'horizontalpodautoscalers',
      'poddisruptionbudgets',
      'secrets',
    ]) {
      for (const object of (await getJson([kind, '-n', 'tracing'])).items as Manifest[]) {
        const tracking = object.metadata.annotations?.['argocd.argoproj.io/tracking-id'] ?? '';
        if (tracking.startsWith('tracing:') && !wanted.has(`${object.kind}/tracing/${object.metadata.name}`))
          leftovers.push(`${object.kind}/${object.metadata.name}`);
      }
    }
    expect(leftovers).toEqual([]);
  }, 600_000);
});
