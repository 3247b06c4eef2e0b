import { synth } from '../../harness/manifests.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { WebsiteWorkload, workloadLabels } from '../../lib/workload/website-workload.ts';
import { ConfigError, loadConfig } from '../../operator/src/bin/config.ts';
import { renderWorkload } from '../../operator/src/reconciler/render.ts';
import { failedCondition, nextStatus, readyCondition } from '../../operator/src/reconciler/status.ts';
import { adoptable, finalizerName, websitesType } from '../../operator/src/reconciler/website.ts';
import { onlyOwnWrites } from '../../operator/src/reconciler/website-controller.ts';

const website = (status?: WebsiteV1['status']): WebsiteV1 => ({
  apiVersion: 'web.example.com/v1',
  kind: 'Website',
  metadata: { name: 'site', namespace: 'ns', uid: 'uid-1', generation: 3 },
  spec: { title: 'Site', replicas: 2 },
  status,
});
const deployment = (status: Record<string, number>, generation = 1) => ({ metadata: { generation }, status });

describe('status', () => {
  test('Ready is True once the current template is rolled out and spec.replicas pods are available', () => {
    expect(
      readyCondition(website(), deployment({ observedGeneration: 1, availableReplicas: 2, updatedReplicas: 2 })),
    ).toEqual({
      type: 'Ready',
      status: 'True',
      observedGeneration: 3,
      reason: 'Available',
      message: '2/2 replicas available',
    });
    expect(
      readyCondition(website(), deployment({ observedGeneration: 1, availableReplicas: 1, updatedReplicas: 2 })),
    ).toMatchObject({
      status: 'False',
      reason: 'Progressing',
      message: '1/2 replicas available',
    });
    // Old pods still available, but the Deployment has not seen its new template yet.
    expect(
      readyCondition(website(), deployment({ observedGeneration: 1, availableReplicas: 2, updatedReplicas: 2 }, 2)),
    ).toMatchObject({
      status: 'False',
      message: '2/2 replicas available, rolling out the current spec',
    });
    // A new Deployment's progress is told by the count alone, so its status fields moving do not
    // each cost a status write.
    expect(readyCondition(website(), undefined)).toMatchObject({ status: 'False', message: '0/2 replicas available' });
    expect(
      readyCondition(website(), deployment({ observedGeneration: 1, availableReplicas: 0, updatedReplicas: 2 })),
    ).toMatchObject({ message: '0/2 replicas available' });
  });

  test('lastTransitionTime moves only when the condition flips; other conditions are kept', () => {
    const earlier = '2026-01-01T00:00:00Z';
    const other = { type: 'Other', status: 'True' as const, reason: 'X', message: 'kept', lastTransitionTime: earlier };
    const current = website({
      conditions: [
        other,
        { type: 'Ready', status: 'False', reason: 'Progressing', message: '1/2', lastTransitionTime: earlier },
      ],
    });
    const now = new Date('2026-11-21T10:00:00.123Z');
    const stillFalse = nextStatus(current, { availableReplicas: 1 }, failedCondition(current, 'forbidden'), now);
    expect(stillFalse.conditions).toEqual([
      other,
      expect.objectContaining({ reason: 'ReconcileFailed', message: 'forbidden', lastTransitionTime: earlier }),
    ]);
    const flipped = nextStatus(
      current,
      { availableReplicas: 2 },
      { type: 'Ready', status: 'True', reason: 'Available', message: '2/2' },
      now,
    );
    expect(flipped.conditions![1].lastTransitionTime).toBe('2026-11-21T10:00:00Z');
    expect(flipped.availableReplicas).toBe(2);
  });
});

describe('adoptable', () => {
  const child = (labels: Record<string, string>, ownerReferences: Array<{ controller?: boolean }> = []) => ({
    metadata: {
      name: 'website-site',
      namespace: 'ns',
      labels,
      ownerReferences: ownerReferences.map((ref) => ({
        apiVersion: 'web.example.com/v1',
        kind: 'Website',
        name: 'site',
        uid: 'uid-0',
        ...ref,
      })),
    },
  });

  test("a child left without a controller, with our labels for this Website's name, is adopted", () => {
    expect(adoptable(child(workloadLabels('site')), website())).toBe(true);
    // An owner that is no controller (a garbage-collection dependency only) does not claim it.
    expect(adoptable(child(workloadLabels('site'), [{ controller: false }]), website())).toBe(true);
  });

  test("one with a controller, of another Website's name, or without our managed-by label is not", () => {
    expect(adoptable(child(workloadLabels('site'), [{ controller: true }]), website())).toBe(false);
    expect(adoptable(child(workloadLabels('other')), website())).toBe(false);
    const { 'app.kubernetes.io/managed-by': _, ...unmanaged } = workloadLabels('site');
    expect(adoptable(child(unmanaged), website())).toBe(false);
  });
});

describe("the Website controller's update predicate", () => {
  const finalizer = finalizerName('web.example.com');
  const stored = { ...website(), metadata: { ...website().metadata, resourceVersion: '1', finalizers: [finalizer] } };
  const edited = (change: (w: typeof stored) => void) => {
    const next = structuredClone(stored);
    next.metadata.resourceVersion = '2';
    change(next);
    return next;
  };

  test("the reconciler's own writes (status, its finalizer added) are no change to reconcile", () => {
    expect(
      onlyOwnWrites(
        stored,
        edited((w) => {
          w.status = { url: 'http://x' };
        }),
        finalizer,
      ),
    ).toBe(true);
    const without = { ...stored, metadata: { ...stored.metadata, finalizers: [] } };
    expect(onlyOwnWrites(without, stored, finalizer)).toBe(true);
  });

  test.each<[string, (w: typeof stored) => void]>([
    [
      'a spec change',
      (w) => {
        w.spec = { ...w.spec, replicas: 3 };
      },
    ],
    [
      'a label change',
      (w) => {
        w.metadata.labels = { team: 'a' };
      },
    ],
    [
      'another finalizer added',
      (w) => {
        w.metadata.finalizers = [finalizer, 'other'];
      },
    ],
    [
      'our finalizer removed by someone else',
      (w) => {
        w.metadata.finalizers = [];
      },
    ],
  ])('%s is a change to reconcile', (_, change) => {
    expect(onlyOwnWrites(stored, edited(change), finalizer)).toBe(false);
  });
});

describe('render', () => {
  test('the reconciler renders exactly what the WebsiteWorkload construct synthesizes', () => {
    const site = website();
    const manifests = synth((chart) => new WebsiteWorkload(chart, 'w', { website: site }));
    expect(renderWorkload(site).map((child) => child.object)).toEqual(manifests);
  });

  test('names', () => {
    expect(finalizerName('apps.example.org')).toBe('websites.apps.example.org/cleanup');
    expect(websitesType('web.example.com')).toEqual({ group: 'web.example.com', version: 'v1', resource: 'websites' });
  });
});

describe('operator configuration', () => {
  test("defaults: the Deployment sets namespace and identity; outside a pod the webhook publishes itself as the Service's endpoint", () => {
    const config = loadConfig({ POD_NAME: 'op-1' });
    expect(config).toMatchObject({
      group: 'web.example.com',
      operatorNamespace: 'website-system',
      watchNamespaces: ['website-system'],
      identity: 'op-1',
      // Off for a local run (kubebuilder's convention); the operator Deployment turns it on.
      leaderElection: false,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      concurrency: 32,
      // No client-side rate limit unless one is configured (controller-runtime since v0.21).
      qps: undefined,
      burst: undefined,
      http2: true,
      metricsPort: 8080,
      healthPort: 8081,
      webhook: {
        port: 9443,
        certMode: 'operator',
        serviceName: 'website-operator-webhook',
        localEndpoint: { address: undefined },
      },
    });
    expect(loadConfig({ WEBHOOK_ADVERTISE_ADDRESS: '10.20.0.5' }).webhook?.localEndpoint).toEqual({
      address: '10.20.0.5',
    });
    expect(loadConfig({ WEBHOOK_ADVERTISE_ADDRESS: 'fd00:10::5' }).webhook?.localEndpoint).toEqual({
      address: 'fd00:10::5',
    });
    // In a pod the Service selects the pod: nothing to publish.
    expect(loadConfig({ KUBERNETES_SERVICE_HOST: '10.0.0.1' }).webhook?.localEndpoint).toBeUndefined();
    expect(loadConfig({ WEBHOOK_ENABLED: 'false' }).webhook).toBeUndefined();
    expect(loadConfig({ KUBE_API_QPS: '50' })).toMatchObject({ qps: 50, burst: undefined });
    expect(loadConfig({ KUBE_API_HTTP2: 'false' }).http2).toBe(false);
    expect(loadConfig({}).watchList).toBe(true);
    expect(loadConfig({ KUBE_API_WATCH_LIST: 'false' }).watchList).toBe(false);
  });

  test.each([
    [{ CONCURRENCY: '0' }, 'CONCURRENCY="0" is not valid: expected an integer >= 1'],
    [{ KUBE_API_QPS: 'fast' }, 'KUBE_API_QPS="fast" is not valid: expected a number >= 0.1'],
    [{ KUBE_API_BURST: '30' }, 'KUBE_API_BURST=30 needs KUBE_API_QPS: a burst is the allowance above a sustained rate'],
    [{ LEADER_ELECTION: 'yes' }, 'LEADER_ELECTION="yes" is not valid: expected true or false'],
    [
      { LEADER_ELECTION: 'true', RENEW_DEADLINE_SECONDS: '20' },
      'leader election needs LEASE_DURATION_SECONDS > RENEW_DEADLINE_SECONDS > RETRY_PERIOD_SECONDS (got 15, 20, 2)',
    ],
    [{ WEBHOOK_CERT_MODE: 'vault' }, 'WEBHOOK_CERT_MODE="vault" is not valid: expected operator or files'],
    [
      { WEBHOOK_ADVERTISE_ADDRESS: 'laptop.local' },
      'WEBHOOK_ADVERTISE_ADDRESS="laptop.local" is not valid: expected an IPv4 or IPv6 address',
    ],
    [
      { WEBHOOK_ADVERTISE_ADDRESS: '127.0.0.1' },
      'WEBHOOK_ADVERTISE_ADDRESS="127.0.0.1" is not valid: it is a loopback address, which a Service endpoint may not be',
    ],
    [{ WEBHOOK_ADVERTISE_ADDRESS: '::1' }, 'it is a loopback address'],
    [{ WEBHOOK_ADVERTISE_ADDRESS: '169.254.10.1' }, 'it is a link-local address'],
    [{ WEBHOOK_ADVERTISE_ADDRESS: 'fe80::1' }, 'it is a link-local address'],
    [{ WEBHOOK_ADVERTISE_ADDRESS: '0.0.0.0' }, 'it is an unspecified address'],
    [{ WEBHOOK_ADVERTISE_ADDRESS: '224.0.0.5' }, 'it is a link-local multicast address'],
    [
      { WEBHOOK_ADVERTISE_ADDRESS: '10.20.0.5', KUBERNETES_SERVICE_HOST: '10.0.0.1' },
      'WEBHOOK_ADVERTISE_ADDRESS is for an operator outside the cluster: in a pod the webhook Service selects the pod',
    ],
  ])('%j is refused with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
