// What a Website owns is declared once, in WEBSITE_OWNS (lib/workload/website-workload.ts), as
// controller-runtime's builder declares Owns(...). Everything else follows from it; these tests fail
// when a kind WebsiteWorkload renders lacks an informer, a cache mask or a Role rule.
import { PassThrough } from 'node:stream';
import { websiteRules } from '../../lib/operator/operator-rbac.ts';
import { shellOperatorRoleRules } from '../../lib/shell-operator/shell-operator.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import type { WebsiteGateway } from '../../lib/workload/website-route.ts';
import { ownedApiVersion, WEBSITE_OWNS, websiteOwns } from '../../lib/workload/website-workload.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { renderWorkload } from '../../operator/src/reconciler/render.ts';
import { childMasks } from '../../operator/src/reconciler/website-controller.ts';
import { testOperatorConfig, websiteOperator } from './operator-config.ts';

const GROUP = 'web.example.com';
const website = (replicas: number, color?: string): WebsiteV1 => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Website',
  metadata: { name: 'shop', namespace: 'team-a', uid: '00000000-0000-0000-0000-000000000001' },
  spec: { title: 'Shop', replicas, ...(color ? { color } : {}) },
});
const gateway: WebsiteGateway = { namespace: 'gateway', name: 'public', domain: 'sites.example.com' };
// Each test holds for an operator without a Gateway (no routes) and for one with a Gateway.
const configurations = [
  ['without a Gateway', undefined],
  ['with a Gateway', gateway],
] as const;
const declared = (withGateway: boolean) =>
  websiteOwns(withGateway).map((owned) => `${ownedApiVersion(owned)} ${owned.kind}`);

test('an HTTPRoute is owned with a Gateway only', () => {
  expect(declared(false)).toEqual(['apps/v1 Deployment', 'v1 Service']);
  expect(declared(true)).toEqual([...declared(false), 'gateway.networking.k8s.io/v1 HTTPRoute']);
  expect(websiteOwns(true)).toEqual(WEBSITE_OWNS);
});

test.each(configurations)(
  '%s: WebsiteWorkload renders exactly the kinds owned, one object each, whatever the Website',
  (_, withGateway) => {
    for (const w of [website(1), website(5, '#000000')]) {
      const route = withGateway && { gateway: withGateway, host: 'shop-team-a.sites.example.com' };
      const rendered = renderWorkload(w, { group: GROUP, ...(route ? { route } : {}) }).map(
        ({ object }) => `${object.apiVersion} ${object.kind}`,
      );
      expect(rendered).toEqual(declared(withGateway !== undefined));
    }
  },
);

test.each(configurations)(
  '%s: the operator caches every owned kind through a mask of its own, keeping the status fields it reads',
  (_, withGateway) => {
    const masks = childMasks(testOperatorConfig({ gateway: withGateway }));
    const owns = websiteOwns(withGateway !== undefined);
    expect([...masks.keys()]).toEqual(owns.map((owned) => owned.kind));
    for (const owned of owns) {
      const mask = masks.get(owned.kind) as Record<string, unknown>;
      expect(mask).toHaveProperty('spec');
      if (owned.statusRead) expect(Object.keys(mask.status as object).sort()).toEqual([...owned.statusRead].sort());
      else expect(mask).not.toHaveProperty('status');
    }
  },
);

test.each(configurations)(
  '%s: the operator watches every owned kind: one informer each, listing and watching it',
  async (_, withGateway) => {
    const api = new FakeKubeApi();
    const owns = websiteOwns(withGateway !== undefined);
    const operator = websiteOperator(testOperatorConfig({ gateway: withGateway }), {
      client: api,
      logger: createLogger('error', new PassThrough()),
      metrics: new OperatorMetrics({ processMetrics: false }),
    });
    await operator.manager.start();
    try {
      // Each informer fills its cache from a streaming list (a watch with sendInitialEvents) and goes
      // on watching on it: its watch starts a few turns of the event loop after the start, all
      // answered at once by the in-memory API.
      const watches = (resource: string) => api.since(0).filter((r) => r === `WATCH ${resource} 200`).length;
      for (let turn = 0; turn < 100 && !owns.every((o) => watches(o.resource) >= 1); turn++)
        await new Promise((resolve) => setImmediate(resolve));
      for (const owned of owns) expect(watches(owned.resource)).toBe(1);
      // With a Gateway, its namespace's Gateways too (their listeners: http or https).
      expect(watches('gateways')).toBe(withGateway ? 1 : 0);
      expect(api.since(0).filter((r) => r.startsWith('LIST'))).toEqual([]);
    } finally {
      await operator.manager.stop();
    }
  },
);

test("both operators' Roles grant every owned kind what each writes it with", () => {
  const grants = (rules: ReturnType<typeof websiteRules>, owned: (typeof WEBSITE_OWNS)[number]) =>
    rules
      .filter((r) => r.apiGroups?.includes(owned.group) && r.resources?.includes(owned.resource))
      .flatMap((r) => r.verbs);
  for (const withGateway of [false, true]) {
    for (const owned of websiteOwns(withGateway)) {
      // The operator: its informer (get, list, watch), create and server-side apply (patch),
      // update, and delete in its finalizer (and of a route it may no longer have).
      expect(grants(websiteRules(GROUP, withGateway), owned).sort()).toEqual(
        ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'].sort(),
      );
    }
    expect(grants(websiteRules(GROUP, false), WEBSITE_OWNS.find((o) => o.kind === 'HTTPRoute')!)).toEqual([]);
  }
  // The shell operator applies each child server-side, and only that.
  for (const withGateway of [false, true])
    for (const owned of websiteOwns(withGateway))
      expect(grants(shellOperatorRoleRules(GROUP, withGateway), owned).sort()).toEqual(['create', 'patch']);
});
