// What the tests of the production trace folders on the real node share (test/node/production.test.ts
// for dist/tracing-production-cassandra/, test/node-walkthroughs/ for the Elasticsearch one as its
// page tells a reader): the folder's pods Ready, oauth2-proxy in front of query, the NetworkPolicies
// probed from another namespace, and no restart. Each takes the node's commands against the
// cluster it checks (nodeCommands).
import { NODE, type nodeCommands } from './node.ts';

type NodeCommands = ReturnType<typeof nodeCommands>;
/** The namespace the production folders use. */
const NS = 'tracing';

export type ProductionPods = Record<'collector' | 'query' | 'gateway', any[]>;

/** Waits for the collector, query and gateway pods, Ready on the real node under their probes. */
export async function productionPods({ readyPods }: NodeCommands): Promise<ProductionPods> {
  const pods = {
    collector: await readyPods(NS, 'app.kubernetes.io/name=jaeger-collector', 2, 300_000),
    query: await readyPods(NS, 'app.kubernetes.io/name=jaeger-query', 2, 300_000),
    gateway: await readyPods(NS, 'app.kubernetes.io/name=otel-collector', 1, 300_000),
  };
  for (const pod of [...pods.collector, ...pods.query, ...pods.gateway]) expect(pod.spec.nodeName).toBe(NODE);
  return pods;
}

/** oauth2-proxy in every query pod, and Jaeger's own UI port not among the pod's ports. */
export function expectProxyInFront(queryPods: any[]): void {
  for (const pod of queryPods) {
    const names = pod.status.containerStatuses.map((c: any) => c.name).sort();
    expect(names).toEqual(['oauth2-proxy', 'query']);
    const ports = pod.spec.containers.flatMap((c: any) => (c.ports ?? []).map((p: any) => p.containerPort));
    expect(ports).toContain(4180);
    expect(ports).not.toContain(16686);
  }
}

/**
 * What each production folder's NetworkPolicies say (the table of docs/use/network-policies.md),
 * probed from the pod `client` of `clientNamespace` (startClient), which must be Ready on the node
 * long enough for kube-router to know it.
 */
export async function expectPoliciesEnforced(
  { connects }: NodeCommands,
  clientNamespace: string,
  pods: ProductionPods,
): Promise<void> {
  const ip = (pod: any) => pod.status.podIP;
  const [collector] = pods.collector;
  const [query] = pods.query;
  const [gatewayPod] = pods.gateway;
  const probes = {
    'gateway OTLP/gRPC (open to every namespace)': [ip(gatewayPod), 4317],
    'gateway OTLP/HTTP (open to every namespace)': [ip(gatewayPod), 4318],
    'gateway metrics (Prometheus only)': [ip(gatewayPod), 8888],
    'Jaeger collector OTLP (the gateway only)': [ip(collector), 4317],
    'Jaeger collector metrics (Prometheus only)': [ip(collector), 8888],
    'query through oauth2-proxy (open)': [ip(query), 4180],
    'query metrics (Prometheus only)': [ip(query), 8888],
  } as const;
  const seen: Record<string, boolean> = {};
  for (const [what, [address, port]] of Object.entries(probes))
    seen[what] = await connects(clientNamespace, 'client', address, port);
  expect(seen).toEqual({
    'gateway OTLP/gRPC (open to every namespace)': true,
    'gateway OTLP/HTTP (open to every namespace)': true,
    'gateway metrics (Prometheus only)': false,
    'Jaeger collector OTLP (the gateway only)': false,
    'Jaeger collector metrics (Prometheus only)': false,
    'query through oauth2-proxy (open)': true,
    'query metrics (Prometheus only)': false,
  });
}

/**
 * No container of `namespaces` restarted: nothing crash-looped while its Secrets and storage were
 * there. A restart is reported with how its last run ended and that run's last log lines.
 */
export async function expectNoRestarts(
  { getJson, kubectl }: NodeCommands,
  namespaces: readonly string[],
): Promise<void> {
  const restarted = (await getJson(['pods', '--all-namespaces'])).items
    .filter((p: any) => namespaces.includes(p.metadata.namespace))
    .flatMap((p: any) =>
      (p.status.containerStatuses ?? [])
        .filter((c: any) => c.restartCount > 0)
        .map((c: any) => ({ pod: p.metadata, container: c.name, restarts: c.restartCount, last: c.lastState })),
    );
  const reports = await Promise.all(
    restarted.map(async ({ pod, container, restarts, last }: any) => {
      const previous = await kubectl([
        'logs',
        '-n',
        pod.namespace,
        pod.name,
        '-c',
        container,
        '--previous',
        '--tail=15',
      ]);
      return `${pod.namespace}/${pod.name}/${container}: ${restarts} (last run: ${JSON.stringify(last)}):\n${previous.stdout || previous.stderr}`;
    }),
  );
  expect(reports).toEqual([]);
}
