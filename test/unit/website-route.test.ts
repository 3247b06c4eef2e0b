// A Website's route through the platform's Gateway (lib/workload/website-route.ts): the host it
// gets, what the Gateway's answer in the route's status means, and the operator on an in-memory API
// rendering, withholding and removing routes (test/cluster/gateway.test.ts does the same against a
// real API server and a real Gateway).
import { PassThrough } from 'node:stream';
import { only, synth } from '../../harness/manifests.ts';
import { websiteRules } from '../../lib/operator/operator-rbac.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { WebsiteOperator } from '../../lib/operator/website-operator.ts';
import { v1beta1ToV1, v1ToV1beta1 } from '../../lib/website/conversion.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import {
  hostnameProblem,
  routeScheme,
  routeState,
  type WebsiteGateway,
  websiteGatewayProblems,
  websiteHost,
  websiteHostProblem,
} from '../../lib/workload/website-route.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';
import { ConfigError, loadConfig } from '../../operator/src/bin/config.ts';
import { EVENTS, type KubeObject } from '../../operator/src/controller/kube-api.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { HostClaims } from '../../operator/src/reconciler/host-claims.ts';
import { websitesType } from '../../operator/src/reconciler/website.ts';
import { type WebsiteOperator as RunningOperator, testOperatorConfig, websiteOperator } from './operator-config.ts';

const GROUP = 'web.example.com';
const gateway: WebsiteGateway = {
  namespace: 'gateway',
  name: 'public',
  domain: 'sites.example.com',
  hostSuffixes: ['example.org'],
};
const website = (name: string, namespace = 'team-a', host?: string): WebsiteV1 => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Website',
  metadata: { name, namespace, uid: `uid-${name}` },
  spec: { title: name, replicas: 1, color: '#2196F3', ...(host ? { host } : {}) },
});

describe('the host of a Website', () => {
  test('<name>-<namespace>.<domain> by default, or its spec.host', () => {
    expect(websiteHost(website('shop'), gateway)).toBe('shop-team-a.sites.example.com');
    expect(websiteHost(website('shop', 'team-a', 'shop.example.org'), gateway)).toBe('shop.example.org');
  });

  test('a host of its own only under an allowed suffix, with a message that says what to do', () => {
    expect(websiteHostProblem(website('shop'), gateway)).toBeUndefined();
    expect(websiteHostProblem(website('shop', 'team-a', 'example.org'), gateway)).toBeUndefined();
    expect(websiteHostProblem(website('shop', 'team-a', 'a.b.example.org'), gateway)).toBeUndefined();
    // A suffix matches at a dot only: notexample.org is not under example.org.
    expect(websiteHostProblem(website('shop', 'team-a', 'notexample.org'), gateway)).toBe(
      'spec.host notexample.org is not allowed: it must be under example.org (the hosts this operator allows); change it, or remove spec.host for the default host shop-team-a.sites.example.com',
    );
    expect(websiteHostProblem(website('shop', 'team-a', 'shop.example.org'), { ...gateway, hostSuffixes: [] })).toBe(
      "spec.host shop.example.org is not allowed: this operator allows no host of a Website's own choosing; remove spec.host for the default host shop-team-a.sites.example.com",
    );
    // A default host whose first part is past 63 characters: not a host name; the message says what to do.
    expect(websiteHostProblem(website('a'.repeat(57)), gateway)).toBe(
      `the default host ${'a'.repeat(57)}-team-a.sites.example.com is not a host name (a part between dots is longer than 63 characters): set spec.host to a host under example.org, or give the Website a shorter name`,
    );
    expect(websiteHostProblem(website('a'.repeat(56)), gateway)).toBeUndefined();
    expect(websiteHostProblem(website('shop', 'team-a', `${'a'.repeat(64)}.example.org`), gateway)).toContain(
      'is not a host name: a part between dots is longer than 63 characters',
    );
  });

  test('hostnames and Gateway settings are checked as the Gateway API checks them', () => {
    expect(hostnameProblem('shop.example.com')).toBeUndefined();
    expect(hostnameProblem('Shop.example.com')).toContain('expected a DNS name');
    expect(hostnameProblem('*.example.com')).toContain('expected a DNS name');
    expect(hostnameProblem(`${'a.'.repeat(127)}a`)).toContain('longer than 253');
    expect(websiteGatewayProblems(gateway)).toEqual([]);
    expect(
      websiteGatewayProblems({
        namespace: 'Gateway',
        name: 'p',
        sectionName: 'web_1',
        domain: 'x..y',
        hostSuffixes: ['-a'],
      }),
    ).toEqual([
      'namespace "Gateway" is not a namespace name',
      'sectionName "web_1" is not a listener name (a DNS label)',
      "domain \"x..y\": expected a DNS name of lowercase letters, digits, '-' and '.', such as shop.example.com",
      "hostSuffixes entry \"-a\": expected a DNS name of lowercase letters, digits, '-' and '.', such as shop.example.com",
    ]);
  });

  test('spec.host survives conversion to v1beta1 and back', () => {
    const v1 = website('shop', 'team-a', 'shop.example.org');
    expect(v1ToV1beta1(v1).spec).toEqual({
      heading: 'shop',
      instances: 1,
      theme: { color: '#2196F3' },
      host: 'shop.example.org',
    });
    expect(v1beta1ToV1(v1ToV1beta1(v1))).toEqual(v1);
    expect(v1ToV1beta1(website('shop')).spec).not.toHaveProperty('host');
  });
});

describe("the Gateway's answer", () => {
  const parent = (conditions: Array<[string, string, string?]>, ref: Record<string, string> = {}) => ({
    parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'gateway', name: 'public', ...ref },
    controllerName: 'traefik.io/gateway-controller',
    conditions: conditions.map(([type, status, reason]) => ({ type, status, reason: reason ?? type, message: 'm' })),
  });

  test('serving once Accepted and ResolvedRefs are True for our Gateway; pending before; refused with its reason', () => {
    expect(routeState(undefined, gateway, 'team-a')).toEqual({ state: 'pending' });
    expect(routeState([parent([['Accepted', 'True']])], gateway, 'team-a')).toEqual({ state: 'pending' });
    expect(
      routeState(
        [
          parent([
            ['Accepted', 'True'],
            ['ResolvedRefs', 'True'],
          ]),
        ],
        gateway,
        'team-a',
      ),
    ).toEqual({ state: 'serving' });
    expect(
      routeState(
        [
          parent([
            ['Accepted', 'False', 'NotAllowedByListeners'],
            ['ResolvedRefs', 'True'],
          ]),
        ],
        gateway,
        'team-a',
      ),
    ).toEqual({ state: 'refused', reason: 'NotAllowedByListeners', message: 'm' });
    // Another Gateway's answer, or another listener's, is not ours.
    expect(
      routeState(
        [
          parent(
            [
              ['Accepted', 'True'],
              ['ResolvedRefs', 'True'],
            ],
            { name: 'other' },
          ),
        ],
        gateway,
        'team-a',
      ),
    ).toEqual({ state: 'pending' });
  });

  test('https only when every listener that takes the host terminates TLS', () => {
    const http = { name: 'web', protocol: 'HTTP' };
    const https = { name: 'websecure', protocol: 'HTTPS', hostname: '*.sites.example.com' };
    expect(routeScheme([http, https], gateway, 'a-b.sites.example.com')).toBe('http');
    expect(routeScheme([https], gateway, 'a-b.sites.example.com')).toBe('https');
    expect(routeScheme([http, https], { ...gateway, sectionName: 'websecure' }, 'a-b.sites.example.com')).toBe('https');
    expect(routeScheme([https], gateway, 'shop.example.org')).toBe('http');
  });
});

describe('WebsiteWorkload with a route', () => {
  test('an HTTPRoute website-<name> from the host to the Service, on the Gateway, owned by the Website', () => {
    const manifests = synth(
      (chart) =>
        new WebsiteWorkload(chart, 'w', {
          website: website('shop'),
          route: { gateway: { ...gateway, sectionName: 'web' }, host: 'shop-team-a.sites.example.com' },
        }),
    );
    const route = only(manifests, 'HTTPRoute', 'website-shop');
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(route.metadata.ownerReferences).toEqual([expect.objectContaining({ kind: 'Website', controller: true })]);
    expect(route.spec).toEqual({
      parentRefs: [
        {
          group: 'gateway.networking.k8s.io',
          kind: 'Gateway',
          namespace: 'gateway',
          name: 'public',
          sectionName: 'web',
        },
      ],
      hostnames: ['shop-team-a.sites.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ group: '', kind: 'Service', name: 'website-shop', port: 80, weight: 1 }],
        },
      ],
    });
    expect(synth((chart) => new WebsiteWorkload(chart, 'w', { website: website('shop') })).map((m) => m.kind)).toEqual([
      'Deployment',
      'Service',
    ]);
  });
});

describe('the operator given a Gateway (construct and configuration)', () => {
  test('grants HTTPRoutes beside the children, and reading Gateways in their namespace; nothing of the Gateway API without one', () => {
    const routes = (rules: ReturnType<typeof websiteRules>) =>
      rules.filter((rule) => rule.resources?.includes('httproutes'));
    expect(routes(websiteRules(GROUP))).toEqual([]);
    expect(routes(websiteRules(GROUP, true))).toEqual([
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    const manifests = synth((chart) => new WebsiteOperator(chart, 'op', { gateway }));
    const role = only(manifests, 'Role', 'website-operator-gateway-website-system');
    expect(role.metadata.namespace).toBe('gateway');
    expect(role.rules).toEqual([
      { apiGroups: ['gateway.networking.k8s.io'], resources: ['gateways'], verbs: ['get', 'list', 'watch'] },
    ]);
    expect(only(manifests, 'RoleBinding', 'website-operator-gateway-website-system').subjects).toEqual([
      { kind: 'ServiceAccount', name: 'website-operator', namespace: 'website-system' },
    ]);
    const env = only(manifests, 'Deployment', 'website-operator').spec.template.spec.containers[0].env;
    const environment = Object.fromEntries(
      env
        .filter((e: { value?: string }) => e.value !== undefined)
        .map((e: { name: string; value: string }) => [e.name, e.value]),
    );
    expect(environment).toMatchObject({
      GATEWAY_NAMESPACE: 'gateway',
      GATEWAY_NAME: 'public',
      WEBSITE_DOMAIN: 'sites.example.com',
      WEBSITE_HOST_SUFFIXES: 'example.org',
    });
    // The operator reads back what the construct wrote.
    expect(loadConfig(environment).gateway).toEqual(gateway);
    expect(() =>
      synth((chart) => new WebsiteOperator(chart, 'op', { gateway: { ...gateway, domain: 'Bad' } })),
    ).toThrow('WebsiteOperator at \'test/op\': gateway domain "Bad": expected a DNS name');
  });

  test("opens the Websites' web port to the Gateway's data plane in each watched namespace, and only with a Gateway", () => {
    const policies = (props: ConstructorParameters<typeof WebsiteOperator>[2]) =>
      synth((chart) => new WebsiteOperator(chart, 'op', props)).filter(
        (m) => m.kind === 'NetworkPolicy' && m.metadata.name === 'website-ingress-from-gateway',
      );
    const [own] = policies({ gateway });
    expect(own.metadata.namespace).toBe('website-system');
    expect(own.spec).toEqual({
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'website' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'gateway' } } }],
          ports: [{ protocol: 'TCP', port: 8080 }],
        },
      ],
    });
    const dataPlane = [{ ipBlock: { cidr: '10.1.0.0/16' } }];
    const listed = policies({ gateway: { ...gateway, dataPlane }, watchNamespaces: WatchNamespaces.of('a', 'b') });
    expect(listed.map((p) => [p.metadata.namespace, p.spec.ingress[0].from])).toEqual([
      ['a', dataPlane],
      ['b', dataPlane],
    ]);
    expect(policies({})).toEqual([]);
    expect(policies({ gateway, networkPolicy: false })).toEqual([]);
    expect(policies({ gateway, watchNamespaces: WatchNamespaces.all() })).toEqual([]);
  });

  test('refuses a Gateway without a domain, and Gateway settings without a Gateway', () => {
    expect(loadConfig({}).gateway).toBeUndefined();
    expect(loadConfig({ GATEWAY_NAME: 'public', WEBSITE_DOMAIN: 'sites.example.com' }).gateway).toEqual({
      namespace: 'website-system',
      name: 'public',
      domain: 'sites.example.com',
    });
    expect(() => loadConfig({ GATEWAY_NAME: 'public' })).toThrow(
      new ConfigError(
        'GATEWAY_NAME="public" needs WEBSITE_DOMAIN: the domain under which each Website gets its host, <name>-<namespace>.<domain>',
      ),
    );
    expect(() => loadConfig({ WEBSITE_DOMAIN: 'sites.example.com' })).toThrow(
      "WEBSITE_DOMAIN set without GATEWAY_NAME: name the Gateway the Websites' routes attach to",
    );
  });
});

describe('HostClaims', () => {
  const stored = (name: string, created: string, host?: string) => ({
    ...website(name, 'team-a', host),
    metadata: { ...website(name).metadata, creationTimestamp: created },
  });

  test('the first to ask holds a host; the others get it in turn when it lets go', () => {
    const claims = new HostClaims(gateway);
    expect(claims.update('team-a/b', stored('b', '2026-01-02T00:00:00Z', 'x.example.org'))).toEqual([]);
    expect(claims.update('team-a/a', stored('a', '2026-01-01T00:00:00Z', 'x.example.org'))).toEqual([]);
    expect(claims.holder('x.example.org')).toBe('team-a/a');
    // A's host changes: B, waiting for it, is told, and now holds it.
    expect(claims.update('team-a/a', stored('a', '2026-01-01T00:00:00Z', 'y.example.org'))).toEqual(['team-a/b']);
    expect(claims.holder('x.example.org')).toBe('team-a/b');
    // A host not allowed is claimed by no one.
    claims.update('team-a/c', stored('c', '2026-01-01T00:00:00Z', 'x.example.com'));
    expect(claims.holder('x.example.com')).toBeUndefined();
  });

  test('a Website whose route already serves a host keeps it from one created earlier that asks later', () => {
    const claims = new HostClaims(gateway);
    claims.update('team-a/new', stored('new', '2026-01-02T00:00:00Z', 'x.example.org'));
    claims.updateRoute('team-a/website-new', {
      metadata: {
        namespace: 'team-a',
        name: 'website-new',
        ownerReferences: [{ apiVersion: `${GROUP}/v1`, kind: 'Website', name: 'new', uid: 'u', controller: true }],
      },
      spec: { hostnames: ['x.example.org'] },
    });
    claims.update('team-a/old', stored('old', '2026-01-01T00:00:00Z', 'x.example.org'));
    expect(claims.holder('x.example.org')).toBe('team-a/new');
    claims.updateRoute('team-a/website-new', undefined);
    expect(claims.holder('x.example.org')).toBe('team-a/old');
  });
});

describe('the operator routing Websites on an in-memory API', () => {
  const WEBSITES = websitesType(GROUP);
  const HTTPROUTES = { group: 'gateway.networking.k8s.io', version: 'v1', resource: 'httproutes' };
  const GATEWAYS = { group: 'gateway.networking.k8s.io', version: 'v1', resource: 'gateways' };
  let running: RunningOperator | undefined;
  afterEach(async () => {
    await running?.manager.stop();
    running = undefined;
  });

  async function until<T>(
    what: string,
    probe: () => T | undefined | false | Promise<T | undefined | false>,
  ): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const value = await probe();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async function start(): Promise<FakeKubeApi> {
    const api = new FakeKubeApi();
    await api.create(GATEWAYS, {
      metadata: { namespace: 'gateway', name: 'public' },
      spec: { gatewayClassName: 'traefik', listeners: [{ name: 'web', protocol: 'HTTP', port: 80 }] },
    });
    running = websiteOperator(testOperatorConfig({ group: GROUP, gateway }), {
      client: api,
      logger: createLogger('error', new PassThrough()),
      metrics: new OperatorMetrics({ processMetrics: false }),
    });
    await running.manager.start();
    return api;
  }

  const ready = (api: FakeKubeApi, name: string) =>
    (api.peek(WEBSITES, 'team-a', name)?.status as WebsiteV1['status'])?.conditions?.find((c) => c.type === 'Ready');
  /** The Deployment available, as a Deployment controller would report it. */
  const available = (api: FakeKubeApi, name: string) =>
    api.modify({ group: 'apps', version: 'v1', resource: 'deployments' }, 'team-a', `website-${name}`, (d) => {
      d.status = { observedGeneration: 1, replicas: 1, availableReplicas: 1, updatedReplicas: 1 };
    });
  /** The Gateway's answer on the route, as its controller writes it. */
  const answer = (api: FakeKubeApi, name: string, accepted: [string, string, string]) =>
    api.modify(HTTPROUTES, 'team-a', `website-${name}`, (route) => {
      route.status = {
        parents: [
          {
            parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'gateway', name: 'public' },
            controllerName: 'traefik.io/gateway-controller',
            conditions: [
              { type: 'Accepted', status: accepted[0], reason: accepted[1], message: accepted[2] },
              { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: '' },
            ],
          },
        ],
      };
    });

  test('status.url is the in-cluster address until the Gateway accepts the route, then http://<host>/', async () => {
    const api = await start();
    await api.create(WEBSITES, website('shop') as unknown as KubeObject);
    const route = await until('the route', () => api.peek(HTTPROUTES, 'team-a', 'website-shop'));
    expect((route.spec as { hostnames: string[] }).hostnames).toEqual(['shop-team-a.sites.example.com']);
    available(api, 'shop');
    await until('RoutePending', () => ready(api, 'shop')?.reason === 'RoutePending');
    expect(ready(api, 'shop')?.message).toBe(
      '1/1 replicas available; waiting for Gateway gateway/public to accept HTTPRoute website-shop for shop-team-a.sites.example.com',
    );
    expect(api.peek(WEBSITES, 'team-a', 'shop')?.status).toMatchObject({
      url: 'http://website-shop.team-a.svc.cluster.local',
    });
    answer(api, 'shop', ['False', 'NotAllowedByListeners', 'no listener allows routes from namespace team-a']);
    await until('RouteNotAccepted', () => ready(api, 'shop')?.reason === 'RouteNotAccepted');
    expect(ready(api, 'shop')?.message).toBe(
      'Gateway gateway/public does not serve HTTPRoute website-shop: NotAllowedByListeners: no listener allows routes from namespace team-a',
    );
    answer(api, 'shop', ['True', 'Accepted', '']);
    await until('Ready', () => ready(api, 'shop')?.status === 'True');
    expect(api.peek(WEBSITES, 'team-a', 'shop')?.status).toMatchObject({
      url: 'http://shop-team-a.sites.example.com/',
    });
  });

  test('a host two Websites ask for: the first keeps it, the second gets HostConflict, a Warning and no route, until the first is deleted', async () => {
    const api = await start();
    await api.create(WEBSITES, website('first', 'team-a', 'shop.example.org') as unknown as KubeObject);
    await until('the first route', () => api.peek(HTTPROUTES, 'team-a', 'website-first'));
    await api.create(WEBSITES, website('second', 'team-a', 'shop.example.org') as unknown as KubeObject);
    await until('HostConflict', () => ready(api, 'second')?.reason === 'HostConflict');
    expect(ready(api, 'second')?.message).toBe(
      'host shop.example.org is already served for Website team-a/first, which asked for it first: set another spec.host',
    );
    expect(api.peek(HTTPROUTES, 'team-a', 'website-second')).toBeUndefined();
    expect(api.peek(HTTPROUTES, 'team-a', 'website-first')).toBeDefined();
    const warnings = async () =>
      (await api.list(EVENTS, 'team-a')).items.filter((e) => (e as { reason?: string }).reason === 'HostConflict');
    await until('the Warning event', async () => (await warnings()).length > 0);
    await api.delete(WEBSITES, { namespace: 'team-a', name: 'first' });
    const route = await until('the second route', () => api.peek(HTTPROUTES, 'team-a', 'website-second'));
    expect((route.spec as { hostnames: string[] }).hostnames).toEqual(['shop.example.org']);
    await until('the first route deleted', () => !api.peek(HTTPROUTES, 'team-a', 'website-first'));
  });

  test('a host not allowed: HostNotAllowed, a Warning, no route, and the Deployment and Service still kept', async () => {
    const api = await start();
    await api.create(WEBSITES, website('shop', 'team-a', 'shop.example.com') as unknown as KubeObject);
    await until('HostNotAllowed', () => ready(api, 'shop')?.reason === 'HostNotAllowed');
    expect(api.peek(HTTPROUTES, 'team-a', 'website-shop')).toBeUndefined();
    expect(api.peek({ group: '', version: 'v1', resource: 'services' }, 'team-a', 'website-shop')).toBeDefined();
    // Asking for an allowed host instead: the route follows.
    api.modify(WEBSITES, 'team-a', 'shop', (w) => {
      (w.spec as { host?: string }).host = 'shop.example.org';
      w.metadata!.generation = 2;
    });
    await until('the route', () => api.peek(HTTPROUTES, 'team-a', 'website-shop'));
  });
});
