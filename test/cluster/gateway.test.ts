// Websites routed through the platform's Gateway (issue 40): the Gateway API's CRDs, a real Gateway
// implementation (Traefik, harness/gateway/gateway.ts) programming a Gateway, and the real operator
// bundle as its ServiceAccount under the RBAC the WebsiteOperator construct synthesizes with its
// `gateway` prop. What the operator writes to the route and reads from the Gateway's answer is
// proven here; the node project proves the route answers with the Website's page.

import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { ROOT } from '../../harness/cluster/env.ts';
import {
  createNamespace,
  deleteNamespace,
  getJson,
  kubectl,
  ok,
  TEST_CLUSTER,
  website,
} from '../../harness/cluster/kube.ts';
import { gatewayManifests, installGatewayApi, startTraefik, type Traefik } from '../../harness/gateway/gateway.ts';
import { type Manifest, synth } from '../../harness/manifests.ts';
import { startShellOperator } from '../../harness/operator/shell-operator.ts';
import { eventually } from '../../harness/process/poll.ts';
import { testPki } from '../../harness/trace/traces.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { WebsiteOperator } from '../../lib/operator/website-operator.ts';
import { ShellOperator } from '../../lib/shell-operator/shell-operator.ts';
import type { WebsiteGateway } from '../../lib/workload/website-route.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';
import { OperatorProcess, serviceAccountKubeconfig } from './operator-process.ts';

const ROUTES_LABEL = { 'website-stack.dev/gateway-routes': 'allowed' };
const DOMAIN = 'sites.example.test';
/** The HTTPS listener's certificate, for every default host. */
const PKI = testPki([`*.${DOMAIN}`]);

/** The certificate Traefik presents for `host` on its `websecure` entry point, verified against the test CA. */
function servedCertificate(traefik: Traefik, host: string): Promise<{ subject: string; altNames: string }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: traefik.websecurePort, servername: host, ca: PKI.ca }, () => {
      const certificate = socket.getPeerCertificate();
      socket.destroy();
      resolve({ subject: String(certificate.subject.CN), altNames: certificate.subjectaltname ?? '' });
    });
    socket.once('error', reject);
  });
}

const apply = (manifests: readonly object[]) =>
  ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: manifests.map((m) => JSON.stringify(m)).join('\n'),
  });

/** The Website's Ready condition once `accept` says it is what the test waits for. */
const readyWhen = (namespace: string, name: string, accept: (condition: any, website: any) => boolean) =>
  eventually(
    `Website ${namespace}/${name}'s Ready condition`,
    async () => {
      const current = await getJson(['website', name, '-n', namespace]);
      const condition = current.status?.conditions?.find((c: any) => c.type === 'Ready');
      return condition && accept(condition, current) ? { condition, website: current } : undefined;
    },
    90_000,
  );

const routeExists = async (namespace: string, name: string) =>
  (await kubectl(['get', 'httproute', `website-${name}`, '-n', namespace, '-o', 'name'])).code === 0;

describe('Websites routed through a real Gateway (Traefik), by the operator as its ServiceAccount', () => {
  let traefik: Traefik;
  let operator: OperatorProcess;
  let operatorNs: string;
  let gatewayNs: string;
  let team: string;
  let refused: string;
  let shellNs: string | undefined;
  let secureNs: string | undefined;
  let secureOperatorNs: string | undefined;
  let secureOperator: OperatorProcess | undefined;
  let gateway: WebsiteGateway;

  beforeAll(async () => {
    await installGatewayApi(TEST_CLUSTER);
    traefik = await startTraefik(TEST_CLUSTER.kubeconfig, join(ROOT, 'test-results', 'gateway'));
    operatorNs = await createNamespace('gateway-op');
    gatewayNs = await createNamespace('gateway');
    // The Gateway admits routes from namespaces with the label: `team` has it, `refused` not.
    team = await createNamespace('team', ROUTES_LABEL);
    refused = await createNamespace('other-team');
    gateway = { namespace: gatewayNs, name: 'public', domain: DOMAIN, hostSuffixes: ['example.test'] };
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'kubernetes.io/tls',
        metadata: { name: 'public-tls', namespace: gatewayNs },
        stringData: { 'tls.crt': PKI.serverCert, 'tls.key': PKI.serverKey },
      },
      ...gatewayManifests({
        className: `traefik-${gatewayNs}`,
        namespace: gatewayNs,
        name: 'public',
        port: traefik.webPort,
        https: { port: traefik.websecurePort, secretName: 'public-tls' },
        routesLabel: ROUTES_LABEL,
      }),
    ]);
    await ok(['wait', '--for=condition=Programmed', '--timeout=60s', `gateway/public`, '-n', gatewayNs]);

    const rbac = synth(
      (chart) =>
        new WebsiteOperator(chart, 'Operator', {
          namespace: operatorNs,
          createNamespace: false,
          watchNamespaces: WatchNamespaces.of(team, refused),
          webhookCertificates: 'cert-manager',
          gateway,
        }),
    ).filter((m: Manifest) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(m.kind));
    await apply(rbac);
    operator = await OperatorProcess.start(
      'op-gateway',
      await serviceAccountKubeconfig('website-operator', operatorNs),
      {
        OPERATOR_NAMESPACE: operatorNs,
        WATCH_NAMESPACE: `${team},${refused}`,
        WEBHOOK_ENABLED: 'false',
        GATEWAY_NAMESPACE: gatewayNs,
        GATEWAY_NAME: 'public',
        WEBSITE_DOMAIN: DOMAIN,
        WEBSITE_HOST_SUFFIXES: 'example.test',
      },
    );
  });

  afterAll(async () => {
    await operator?.kill();
    await secureOperator?.kill();
    await traefik?.stop();
    for (const namespace of [team, refused, shellNs, secureNs]) {
      if (!namespace) continue;
      const names = (await kubectl(['get', 'websites', '-n', namespace, '-o', 'name'])).stdout.split('\n');
      for (const name of names.filter(Boolean))
        await kubectl(['patch', name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    }
    for (const namespace of [team, refused, shellNs, secureNs, gatewayNs, operatorNs, secureOperatorNs])
      if (namespace) await deleteNamespace(namespace);
    if (gatewayNs) await kubectl(['delete', 'gatewayclass', `traefik-${gatewayNs}`, '--ignore-not-found']);
  });

  test('a Website gets an HTTPRoute on the Gateway for <name>-<namespace>.<domain>, and status.url that address once the Gateway accepts it', async () => {
    await apply([website('shop', team, { title: 'Shop', replicas: 1 })]);
    const { website: ready } = await readyWhen(team, 'shop', (c) => c.status === 'True');
    expect(ready.status.url).toBe(`http://shop-${team}.${DOMAIN}/`);
    const route = await getJson(['httproute', 'website-shop', '-n', team]);
    expect(route.spec.hostnames).toEqual([`shop-${team}.${DOMAIN}`]);
    expect(route.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Website', name: 'shop', uid: ready.metadata.uid, controller: true }),
    ]);
    // Traefik's own answer, as the operator read it.
    expect(route.status.parents).toEqual([
      expect.objectContaining({
        controllerName: 'traefik.io/gateway-controller',
        conditions: expect.arrayContaining([
          expect.objectContaining({ type: 'Accepted', status: 'True' }),
          expect.objectContaining({ type: 'ResolvedRefs', status: 'True' }),
        ]),
      }),
    ]);
    // The URL column of `kubectl get websites -o wide`.
    const wide = await ok(['get', 'website', 'shop', '-n', team, '-o', 'wide']);
    expect(wide).toContain(`http://shop-${team}.${DOMAIN}/`);
  });

  test("a Website in a namespace the listener does not admit: Ready=False with the Gateway's own refusal, and no URL claimed", async () => {
    await apply([website('shop', refused, { title: 'Shop', replicas: 1 })]);
    const { condition, website: current } = await readyWhen(refused, 'shop', (c) => c.reason === 'RouteNotAccepted');
    expect(condition.status).toBe('False');
    expect(condition.message).toMatch(
      new RegExp(`^Gateway ${gatewayNs}/public does not serve HTTPRoute website-shop: NotAllowedByListeners`),
    );
    expect(current.status.url).toBe(`http://website-shop.${refused}.svc.cluster.local`);
  });

  test('two Websites ask for one host: the first keeps serving it, the second gets HostConflict, a Warning and no route, and the host once the first is deleted', async () => {
    await apply([website('first', team, { title: 'First', replicas: 1, host: 'shop.example.test' })]);
    await readyWhen(team, 'first', (c) => c.status === 'True');
    await apply([website('second', team, { title: 'Second', replicas: 1, host: 'shop.example.test' })]);
    const { condition } = await readyWhen(team, 'second', (c) => c.reason === 'HostConflict');
    expect(condition.message).toBe(
      `host shop.example.test is already served for Website ${team}/first, which asked for it first: set another spec.host`,
    );
    expect(await routeExists(team, 'second')).toBe(false);
    const first = await getJson(['website', 'first', '-n', team]);
    expect(first.status.url).toBe('http://shop.example.test/');
    const events = await eventually('the HostConflict event', async () => {
      const found = await getJson(['events', '-n', team, '--field-selector', 'reason=HostConflict']);
      return found.items.length > 0 && found.items;
    });
    expect(new Set(events.map((e: any) => `${e.type} ${e.involvedObject.name}`))).toEqual(new Set(['Warning second']));

    // Deleting the first removes its route (the finalizer); the second gets the host.
    await ok(['delete', 'website', 'first', '-n', team, '--wait=true', '--timeout=60s']);
    expect(await routeExists(team, 'first')).toBe(false);
    const { website: second } = await readyWhen(team, 'second', (c) => c.status === 'True');
    expect(second.status.url).toBe('http://shop.example.test/');
  });

  test('a host outside the allowed suffixes is refused with a message that says what to do; the Website keeps its Deployment and Service', async () => {
    await apply([website('elsewhere', team, { title: 'Elsewhere', replicas: 1, host: 'shop.example.com' })]);
    const { condition } = await readyWhen(team, 'elsewhere', (c) => c.reason === 'HostNotAllowed');
    expect(condition.message).toBe(
      `spec.host shop.example.com is not allowed: it must be under example.test (the hosts this operator allows); change it, or remove spec.host for the default host elsewhere-${team}.${DOMAIN}`,
    );
    expect(await routeExists(team, 'elsewhere')).toBe(false);
    await ok(['get', 'deployment,service', 'website-elsewhere', '-n', team]);
    // A malformed host never reaches the operator: the schema refuses it.
    const invalid = await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(website('bad', team, { title: 'Bad', replicas: 1, host: 'Shop_Example' })),
    });
    expect(invalid.code).not.toBe(0);
    expect(invalid.stderr).toContain('spec.host');
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  test("the shell operator with the same Gateway applies WebsiteWorkload's HTTPRoute under its ServiceAccount, and the Gateway accepts it", async () => {
    shellNs = await createNamespace('shell-team', {
      ...ROUTES_LABEL,
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    await apply(
      synth((chart) => new ShellOperator(chart, 'shell', { namespace: shellNs!, createNamespace: false, gateway })),
    );
    await apply([website('blog', shellNs, { title: 'Blog', replicas: 1 })]);
    const cycle = startShellOperator(TEST_CLUSTER, shellNs, { ONCE: '1' });
    expect(await cycle.exited).toBe(0);
    const stored = await getJson(['website', 'blog', '-n', shellNs]);
    const [rendered] = synth(
      (chart) =>
        new WebsiteWorkload(chart, 'w', { website: stored, route: { gateway, host: `blog-${shellNs}.${DOMAIN}` } }),
    ).filter((m) => m.kind === 'HTTPRoute');
    const route = await eventually('the route accepted by Traefik', async () => {
      const current = await getJson(['httproute', 'website-blog', '-n', shellNs!]);
      const accepted = current.status?.parents?.[0]?.conditions?.find((c: any) => c.type === 'Accepted');
      return accepted?.status === 'True' && current;
    });
    // As rendered; the API server adds its defaults (kinds, groups, weights, a path match).
    expect(route.spec.hostnames).toEqual(rendered.spec.hostnames);
    expect(route.spec.parentRefs).toEqual(rendered.spec.parentRefs.map((ref: object) => expect.objectContaining(ref)));
    expect(route.spec.rules.map((rule: any) => rule.backendRefs)).toEqual(
      rendered.spec.rules.map((rule: any) => rule.backendRefs.map((ref: object) => expect.objectContaining(ref))),
    );
    expect(route.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Website', name: 'blog', uid: stored.metadata.uid, controller: true }),
    ]);
  });

  test("with the Gateway's HTTPS listener as its section: status.url is https://, and Traefik serves the host with the listener's certificate", async () => {
    secureOperatorNs = await createNamespace('gateway-op-tls');
    secureNs = await createNamespace('secure-team', ROUTES_LABEL);
    const secure: WebsiteGateway = { ...gateway, sectionName: 'websecure' };
    await apply(
      synth(
        (chart) =>
          new WebsiteOperator(chart, 'Operator', {
            namespace: secureOperatorNs!,
            createNamespace: false,
            watchNamespaces: WatchNamespaces.of(secureNs!),
            webhookCertificates: 'cert-manager',
            gateway: secure,
          }),
      ).filter((m: Manifest) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(m.kind)),
    );
    secureOperator = await OperatorProcess.start(
      'op-gateway-tls',
      await serviceAccountKubeconfig('website-operator', secureOperatorNs),
      {
        OPERATOR_NAMESPACE: secureOperatorNs,
        WATCH_NAMESPACE: secureNs,
        WEBHOOK_ENABLED: 'false',
        GATEWAY_NAMESPACE: gatewayNs,
        GATEWAY_NAME: 'public',
        GATEWAY_SECTION_NAME: 'websecure',
        WEBSITE_DOMAIN: DOMAIN,
      },
    );
    await apply([website('shop', secureNs, { title: 'Shop', replicas: 1 })]);
    const host = `shop-${secureNs}.${DOMAIN}`;
    const { website: ready } = await readyWhen(secureNs, 'shop', (c) => c.status === 'True');
    expect(ready.status.url).toBe(`https://${host}/`);
    const route = await getJson(['httproute', 'website-shop', '-n', secureNs]);
    expect(route.spec.parentRefs).toEqual([expect.objectContaining({ name: 'public', sectionName: 'websecure' })]);
    expect(await servedCertificate(traefik, host)).toEqual({
      subject: 'server',
      altNames: `DNS:*.${DOMAIN}, IP Address:127.0.0.1`,
    });
    expect(secureOperator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
