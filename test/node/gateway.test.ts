// A Website opened from outside the cluster: the real operator bundle (as its ServiceAccount, under
// the construct's RBAC and NetworkPolicy for a Gateway) routes it through a real Gateway (Traefik on
// this machine, harness/gateway/gateway.ts) to its nginx pods on the real node, whose kube-router
// enforces the Websites' ingress policy. test/cluster/gateway.test.ts covers the route's life cycle;
// here, that the address in status.url answers with the Website's page, and only from the data plane
// the policy names.
import { get as httpGet } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { NODE_CLUSTER, ROOT } from '../../harness/cluster/env.ts';
import { serviceAccountKubeconfig } from '../../harness/cluster/kubectl.ts';
import { gatewayManifests, installGatewayApi, startTraefik, type Traefik } from '../../harness/gateway/gateway.ts';
import { synth } from '../../harness/manifests.ts';
import { dist, getJson, kubectl, ok, readyPods } from '../../harness/node/node.ts';
import { OperatorProcess } from '../../harness/operator/operator-process.ts';
import { eventually } from '../../harness/process/poll.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { WebsiteOperator } from '../../lib/operator/website-operator.ts';
import type { WebsiteGateway } from '../../lib/workload/website-route.ts';

// Namespaces of this suite only: the operator dist/ runs on this cluster watches website-system.
const OPERATOR_NS = 'gateway-operator';
const GATEWAY_NS = 'gateway';
const TEAM = 'gateway-team';
const DOMAIN = 'sites.example.test';
/** This machine as the node's pods see it (scripts/real-node.sh): where Traefik's connections come from. */
const HOST_PEER = [{ ipBlock: { cidr: '172.31.254.1/32' } }];

const apply = (manifests: readonly object[]) =>
  ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: manifests.map((m) => JSON.stringify(m)).join('\n'),
  });

/** What the WebsiteOperator construct renders for the operator with `gateway`, in its namespaces. */
const operatorObjects = (gateway: WebsiteGateway) =>
  synth(
    (chart) =>
      new WebsiteOperator(chart, 'Operator', {
        namespace: OPERATOR_NS,
        createNamespace: false,
        watchNamespaces: WatchNamespaces.of(TEAM),
        webhookCertificates: 'cert-manager',
        gateway,
      }),
  ).filter((m) => ['ServiceAccount', 'Role', 'RoleBinding', 'NetworkPolicy'].includes(m.kind));

/** Whether a TCP connection from this machine to `address:port` opens within 3 s. */
function connectsFromHost(address: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port, timeout: 3_000 });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}

/**
 * GET http://<host>/ through Traefik's web entry point: the status and body. (node:http, since
 * fetch drops a Host header it is given.)
 */
function throughGateway(traefik: Traefik, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(
      { host: '127.0.0.1', port: traefik.webPort, path: '/', headers: { host }, timeout: 10_000 },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer within 10 s')));
    request.on('error', reject);
  });
}

describe("a Website's status.url answers through the Gateway, from the data plane its policy admits", () => {
  let traefik: Traefik;
  let operator: OperatorProcess;

  beforeAll(async () => {
    await installGatewayApi(NODE_CLUSTER);
    traefik = await startTraefik(NODE_CLUSTER.kubeconfig, join(ROOT, 'test-results', 'node-gateway'));
    await apply(
      [OPERATOR_NS, GATEWAY_NS, TEAM].map((name) => ({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
      })),
    );
    await apply(
      gatewayManifests({ className: 'traefik', namespace: GATEWAY_NS, name: 'public', port: traefik.webPort }),
    );
    await ok(['wait', '--for=condition=Programmed', '--timeout=60s', 'gateway/public', '-n', GATEWAY_NS]);
    // The Website API as dist/ ships it (the other suites apply the same file).
    await ok(['apply', '--server-side', '--force-conflicts', '-f', join(dist('website-operator'), 'website-crd.yaml')]);
    await ok(['wait', '--for=condition=Established', '--timeout=60s', 'crd/websites.web.example.com']);
  });

  afterAll(async () => {
    await operator?.kill();
    await traefik?.stop();
    await kubectl(['delete', 'websites', '--all', '-n', TEAM, '--wait=false']);
  });

  test('the page answers at its host once the Gateway accepts the route; the pods refuse a data plane their policy does not name', async () => {
    // First the construct's default data plane: the Gateway's namespace, which Traefik on this
    // machine is not in.
    const gateway: WebsiteGateway = { namespace: GATEWAY_NS, name: 'public', domain: DOMAIN };
    await apply(operatorObjects(gateway));
    operator = await OperatorProcess.start(
      'op-gateway-node',
      await serviceAccountKubeconfig(NODE_CLUSTER, 'website-operator', OPERATOR_NS),
      {
        OPERATOR_NAMESPACE: OPERATOR_NS,
        WATCH_NAMESPACE: TEAM,
        GATEWAY_NAMESPACE: GATEWAY_NS,
        GATEWAY_NAME: 'public',
        WEBSITE_DOMAIN: DOMAIN,
      },
    );
    await apply([
      {
        apiVersion: 'web.example.com/v1',
        kind: 'Website',
        metadata: { name: 'shop', namespace: TEAM },
        spec: { title: 'Shop through the Gateway', replicas: 1, color: '#4CAF50' },
      },
    ]);
    const host = `shop-${TEAM}.${DOMAIN}`;
    const ready = await eventually(
      'Website shop Ready at its host',
      async () => {
        const current = await getJson(['website', 'shop', '-n', TEAM]);
        const condition = current.status?.conditions?.find((c: any) => c.type === 'Ready');
        return condition?.status === 'True' && current.status.url === `http://${host}/` && current;
      },
      { timeoutMs: 180_000 },
    );
    expect(ready.status.availableReplicas).toBe(1);
    const [pod] = await readyPods(TEAM, 'app.kubernetes.io/instance=shop', 1);

    // The policy admits the Gateway's namespace only: this machine, where Traefik runs, cannot
    // reach the pod's web port (kube-router drops the connection).
    // (Awaited: kube-router programs a new pod's policies moments after the pod starts.)
    await eventually(
      'the web port closed to this machine',
      async () => !(await connectsFromHost(pod.status.podIP, 8080)),
      { timeoutMs: 60_000 },
    );

    // The data plane named as it is (this machine's address): the port opens, and the page answers
    // at its host through the Gateway.
    await apply(operatorObjects({ ...gateway, dataPlane: HOST_PEER }));
    await eventually('the web port open to this machine', () => connectsFromHost(pod.status.podIP, 8080), {
      timeoutMs: 60_000,
    });
    let last = '';
    const served = await eventually(
      'the page through the Gateway',
      async () => {
        const answer = await throughGateway(traefik, host).catch((error: Error) => {
          last = error.message;
          return undefined;
        });
        if (answer) last = `${answer.status} ${answer.body.slice(0, 200)}`;
        return answer?.status === 200 && answer;
      },
      { timeoutMs: 60_000, progress: () => `last answer: ${last}` },
    );
    expect(served.body).toContain('Shop through the Gateway');
    expect(served.body).toContain('#4CAF50');
    // Another host is not routed: Traefik's 404.
    expect((await throughGateway(traefik, `other-${TEAM}.${DOMAIN}`)).status).toBe(404);
    expect(pod.spec.nodeName).toBe('real-node');
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  test('deleting the Website removes its route: its host then answers 404 from the Gateway', async () => {
    const host = `shop-${TEAM}.${DOMAIN}`;
    await ok(['delete', 'website', 'shop', '-n', TEAM, '--wait=true', '--timeout=60s']);
    expect((await kubectl(['get', 'httproute', 'website-shop', '-n', TEAM])).code).not.toBe(0);
    let last = 0;
    await eventually(
      'the host to answer 404 once Traefik has dropped the route',
      async () => {
        last = (await throughGateway(traefik, host)).status;
        return last === 404;
      },
      { timeoutMs: 60_000, progress: () => `last status: ${last}` },
    );
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
