import { PassThrough } from 'node:stream';
import { Controller, ownerKey } from '../../operator/src/controller/controller.ts';
import { DEPLOYMENTS, type KubeObject, type ResourceType } from '../../operator/src/controller/kube-api.ts';
import { Manager } from '../../operator/src/controller/manager.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { testOperatorConfig } from './operator-config.ts';

// The generic Controller on a Manager, on the in-memory API, with a reconciler that only records
// the keys it is given: what enqueues a key (the primary's changes the predicate lets through, a
// child's controller owner of the primary kind) and nothing else.

const NS = 'team-a';
const GROUP = 'example.com';
const WIDGETS: ResourceType = { group: GROUP, version: 'v1', resource: 'widgets' };

const ref = (overrides: Record<string, unknown> = {}) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Widget',
  name: 'w',
  uid: 'uid-w',
  controller: true,
  ...overrides,
});

describe('ownerKey', () => {
  test("the controller owner of the primary kind and group, in the child's namespace", () => {
    expect(
      ownerKey(
        { metadata: { namespace: NS, ownerReferences: [ref({ controller: false, name: 'x' }), ref()] } },
        'Widget',
        GROUP,
      ),
    ).toBe(`${NS}/w`);
  });

  test('none for an owner that is no controller, of another kind, or of another group (even one whose name starts alike)', () => {
    expect(
      ownerKey({ metadata: { namespace: NS, ownerReferences: [ref({ controller: false })] } }, 'Widget', GROUP),
    ).toBeUndefined();
    expect(
      ownerKey({ metadata: { namespace: NS, ownerReferences: [ref({ kind: 'Gadget' })] } }, 'Widget', GROUP),
    ).toBeUndefined();
    expect(
      ownerKey(
        { metadata: { namespace: NS, ownerReferences: [ref({ apiVersion: `${GROUP}.other/v1` })] } },
        'Widget',
        GROUP,
      ),
    ).toBeUndefined();
    expect(ownerKey({ metadata: { namespace: NS } }, 'Widget', GROUP)).toBeUndefined();
  });
});

describe('Controller', () => {
  let manager: Manager | undefined;
  afterEach(async () => {
    await manager?.stop();
    manager = undefined;
  });

  async function start(api: FakeKubeApi) {
    const metrics = new OperatorMetrics({ processMetrics: false });
    manager = new Manager(testOperatorConfig({ watchNamespaces: [NS] }), {
      client: api,
      logger: createLogger('silent', new PassThrough()),
      metrics,
    });
    const reconciled: string[] = [];
    const widgets = manager.informer<KubeObject>(WIDGETS);
    const deployments = manager.informer(DEPLOYMENTS, { labelSelector: 'owned=yes', resync: false });
    const controller = new Controller(manager, {
      name: 'widget',
      // A change to `ignored` alone is no change to reconcile.
      for: {
        kind: 'Widget',
        group: GROUP,
        informer: widgets,
        update: (previous, current) =>
          previous.spec !== undefined && JSON.stringify(previous.spec) !== JSON.stringify(current.spec),
      },
      owns: [deployments],
      reconciler: {
        reconcile: async (key) => {
          reconciled.push(key);
        },
      },
      concurrency: 1,
    });
    await manager.start();
    const idle = async () => {
      for (let quiet = 0; quiet < 20; quiet++) {
        await new Promise((resolve) => setImmediate(resolve));
        if (controller.queue.active > 0) quiet = 0;
      }
    };
    await idle();
    return {
      /** Keys reconciled since the last call. */
      reconciled: async () => {
        await idle();
        return reconciled.splice(0);
      },
    };
  }

  test('reconciles each primary object found at start, and one created or whose change the predicate lets through', async () => {
    const api = new FakeKubeApi();
    await api.create(WIDGETS, { metadata: { name: 'old', namespace: NS }, spec: { size: 1 } });
    const h = await start(api);
    expect(await h.reconciled()).toEqual([`${NS}/old`]);
    await api.create(WIDGETS, { metadata: { name: 'w', namespace: NS }, spec: { size: 1 } });
    expect(await h.reconciled()).toEqual([`${NS}/w`]);
    api.modify(WIDGETS, NS, 'w', (w) => {
      w.ignored = true;
    });
    expect(await h.reconciled()).toEqual([]);
    api.modify(WIDGETS, NS, 'w', (w) => {
      w.spec = { size: 2 };
    });
    expect(await h.reconciled()).toEqual([`${NS}/w`]);
    await api.delete(WIDGETS, { namespace: NS, name: 'w' });
    expect(await h.reconciled()).toEqual([`${NS}/w`]);
  });

  test('a change to an owned child reconciles its controller owner; a child owned by anything else reconciles nothing', async () => {
    const api = new FakeKubeApi();
    const h = await start(api);
    await h.reconciled();
    await api.create(DEPLOYMENTS, {
      metadata: { name: 'd', namespace: NS, labels: { owned: 'yes' }, ownerReferences: [ref()] },
    });
    expect(await h.reconciled()).toEqual([`${NS}/w`]);
    api.modify(DEPLOYMENTS, NS, 'd', (d) => {
      d.status = { availableReplicas: 1 };
    });
    expect(await h.reconciled()).toEqual([`${NS}/w`]);
    await api.create(DEPLOYMENTS, {
      metadata: {
        name: 'other',
        namespace: NS,
        labels: { owned: 'yes' },
        ownerReferences: [ref({ kind: 'ReplicaSet', apiVersion: 'apps/v1' })],
      },
    });
    await api.create(DEPLOYMENTS, { metadata: { name: 'orphan', namespace: NS, labels: { owned: 'yes' } } });
    expect(await h.reconciled()).toEqual([]);
  });
});
