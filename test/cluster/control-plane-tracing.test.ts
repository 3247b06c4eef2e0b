// One trace through the control plane (docs/use/control-plane-tracing.md): the development trace
// stack of dist/tracing-dev (Jaeger and the Collector, as `npm run tracing:up` runs them), a cluster
// of its own started as a user starts one (`scripts/cluster.sh up --tracing`), its API server and
// etcd exporting to that Collector, and the operator (the bundle, as its ServiceAccount under the
// Role dist/ ships) serving the conversion webhook and tracing to the same Collector.

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, testCluster } from '../../harness/cluster/env.ts';
import { TestHostAddress } from '../../harness/cluster/host-address.ts';
import { kubectl, kubectlOk, serviceAccountKubeconfig } from '../../harness/cluster/kubectl.ts';
import {
  localEndpointRbacManifests,
  OPERATOR_NS as NS,
  operatorRbacManifests,
  webhookServiceManifest,
} from '../../harness/operator/operator-manifests.ts';
import { OperatorProcess } from '../../harness/operator/operator-process.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { type JaegerTrace, jaegerTraces, type LocalStack, startStack } from '../../harness/trace/traces.ts';

const cluster = testCluster('-tracing');
const run = promisify(execFile);
const ok = (args: string[], input?: string) => kubectlOk(cluster, args, { input });
const ANNOTATION = 'websites.web.example.com/traceparent';

let stack: LocalStack;
let operator: OperatorProcess | undefined;
let query: string;

type Span = JaegerTrace['spans'][number];
const serviceOf = (trace: JaegerTrace, span: Span) => trace.processes[span.processID].serviceName;
const tag = (span: Span, key: string) => span.tags.find((t) => t.key === key)?.value;
/** The request path an API server span records, under current or older HTTP conventions. */
const pathOf = (span: Span) => String(tag(span, 'url.path') ?? tag(span, 'http.target') ?? '');
const parentOf = (span: Span) => span.references.find((r) => r.refType === 'CHILD_OF')?.spanID;
const links = (span: Span) => span.references.filter((r) => r.refType === 'FOLLOWS_FROM');

beforeAll(async () => {
  // The stack first: the API server starts exporting as soon as it runs.
  stack = await startStack('tracing-dev', { only: ['jaeger', 'otel-collector'], order: ['jaeger', 'otel-collector'] });
  query = stack.url('jaeger', 'query');
  await run('bash', [join(ROOT, 'scripts/cluster.sh'), 'up', '--tracing'], {
    env: {
      ...cluster.env,
      WEBSITE_STACK_CLUSTER_TRACING_ENDPOINT: `127.0.0.1:${stack.port('otel-collector', 'otlp-grpc')}`,
    },
  });
  await ok(['apply', '--server-side', '-f', join(ROOT, 'dist/website-operator/website-crd.yaml')]);
  await ok(['wait', '--for=condition=Established', '--timeout=60s', 'crd/websites.web.example.com']);
  await ok(['create', 'namespace', NS]);
  await ok(
    ['apply', '--server-side', '-f', '-'],
    [...operatorRbacManifests(), ...localEndpointRbacManifests(), webhookServiceManifest()]
      .map((m) => JSON.stringify(m))
      .join('\n'),
  );
  const host = new TestHostAddress();
  operator = await OperatorProcess.start('traced', await serviceAccountKubeconfig(cluster, 'website-operator', NS), {
    WEBHOOK_ENABLED: 'true',
    WEBHOOK_PORT: String(await freePort()),
    WEBHOOK_ADVERTISE_ADDRESS: host.address,
    OTEL_EXPORTER_OTLP_ENDPOINT: stack.url('otel-collector', 'otlp-http'),
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
}, 300_000);

afterAll(async () => {
  await operator?.kill();
  if (process.env.KEEP_CLUSTER !== '1')
    await run('bash', [join(ROOT, 'scripts/cluster.sh'), 'down'], { env: cluster.env }).catch(() => undefined);
  await stack?.stop();
}, 120_000);

const website = (name: string, annotations: Record<string, string> = {}) =>
  JSON.stringify({
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name, namespace: NS, annotations },
    spec: { title: 'Traced', replicas: 1 },
  });

describe('the control plane traced into the development trace stack', () => {
  test("a v1beta1 read: the API server's request and its etcd spans in one trace; its conversion webhook call in a trace of its own, during the request, with the operator's conversion as its child", async () => {
    await ok(['apply', '-f', '-'], website('converted'));
    const get = ['get', 'websites.v1beta1.web.example.com', 'converted', '-n', NS, '-o', 'jsonpath={.apiVersion}'];
    // Converted once the operator has written the CRD's caBundle; then the read to look for.
    await eventually(
      'a v1beta1 read through the webhook',
      async () => (await kubectl(cluster, get)).stdout === 'web.example.com/v1beta1',
    );
    const sent = Date.now() * 1000;
    await ok(get);
    const path = `/apis/web.example.com/v1beta1/namespaces/${NS}/websites/converted`;
    const { trace, request } = await eventually(
      'the trace of the v1beta1 GET, with etcd spans',
      async () => {
        for (const t of await jaegerTraces(query, 'apiserver')) {
          const found = t.spans.find(
            (s) => pathOf(s) === path && tag(s, 'span.kind') === 'server' && s.startTime >= sent,
          );
          if (found && t.spans.some((s) => serviceOf(t, s) === 'etcd')) return { trace: t, request: found };
        }
        return undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const byId = new Map(trace.spans.map((s) => [s.spanID, s]));
    const ancestors = (span: Span) => {
      const chain: Span[] = [];
      for (let id = parentOf(span); id && byId.has(id); id = parentOf(byId.get(id)!)) chain.push(byId.get(id)!);
      return chain;
    };
    // etcd's spans hang under the request: the API server's etcd client carries its context.
    const etcd = trace.spans.filter((s) => serviceOf(trace, s) === 'etcd');
    expect(etcd.map((s) => s.operationName)).toContain('etcdserverpb.KV/Range');
    for (const span of etcd) expect(ancestors(span)).toContain(request);
    expect(trace.spans.some((s) => s.operationName === 'authorization')).toBe(true);

    // Kubernetes 1.36 calls a conversion webhook without the request's context (the converter
    // starts from context.TODO()): the call is the root of a trace of its own, made while the
    // request ran, and the operator's conversion is the child of that call.
    const during = (s: Span) => s.startTime >= request.startTime && s.startTime <= request.startTime + request.duration;
    const conversion = await eventually(
      "the operator's conversion during the GET",
      async () => {
        for (const t of await jaegerTraces(query, 'website-operator')) {
          const convert = t.spans.find((s) => s.operationName === 'POST /convert' && during(s));
          if (convert && t.spans.length >= 2) return { trace: t, convert };
        }
        return undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const { convert } = conversion;
    expect(conversion.trace.traceID).not.toBe(trace.traceID);
    expect(tag(convert, 'span.kind')).toBe('server');
    expect(tag(convert, 'website.conversion.desired_api_version')).toBe('web.example.com/v1beta1');
    expect(tag(convert, 'website.conversion.result')).toBe('Success');
    const call = conversion.trace.spans.find((s) => s.spanID === parentOf(convert))!;
    expect(serviceOf(conversion.trace, call)).toBe('apiserver');
    expect(tag(call, 'span.kind')).toBe('client');
    expect(tag(call, 'url.full')).toBe(`https://website-operator-webhook.${NS}.svc:443/convert?timeout=30s`);
    expect(parentOf(call)).toBeUndefined();
    expect(during(call)).toBe(true);

    // The API server's probes (scripts/cluster.sh asked for /readyz while the cluster came up, and
    // the API server probes itself) are dropped whole by the Collector's control-plane pipeline.
    const probes = (await jaegerTraces(query, 'apiserver')).filter((t) =>
      t.spans.some((s) => /^\/(readyz|livez|healthz)(\/|$)/.test(pathOf(s))),
    );
    expect(probes.map((t) => t.traceID)).toEqual([]);
  });

  test("a Website's reconcile links to the writer's span in its annotation, and the API server's span of each of its requests links to that request", async () => {
    const writer = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };
    await ok(['apply', '-f', '-'], website('linked', { [ANNOTATION]: `00-${writer.traceId}-${writer.spanId}-01` }));
    const reconcile = await eventually(
      'a reconcile of Website linked that created its Deployment',
      async () =>
        (await jaegerTraces(query, 'website-operator')).find(
          (t) =>
            t.spans.some((s) => tag(s, 'website.name') === 'linked' && s.operationName === 'reconcile Website') &&
            t.spans.some((s) => s.operationName === 'CREATE deployments'),
        ),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const root = reconcile.spans.find((s) => s.operationName === 'reconcile Website')!;
    expect(links(root)).toEqual([{ refType: 'FOLLOWS_FROM', traceID: writer.traceId, spanID: writer.spanId }]);
    expect(Number(tag(root, 'website.queue_wait_ms'))).toBeGreaterThanOrEqual(0);
    expect(tag(root, 'website.resource_version')).toMatch(/^\d+$/);
    expect(reconcile.spans.some((s) => s.operationName === 'render Website' && parentOf(s) === root.spanID)).toBe(true);
    // The operator is no member of system:masters or system:monitoring: the API server starts a
    // trace of its own for each request and links it to the operator's client span.
    const requests = reconcile.spans.filter((s) => tag(s, 'span.kind') === 'client');
    expect(requests.map((s) => s.operationName)).toEqual(
      expect.arrayContaining(['CREATE deployments', 'CREATE services']),
    );
    const linkedBy = await eventually(
      "the API server's spans linked to each of the reconcile's requests",
      async () => {
        const found = new Map<string, Span>();
        for (const t of await jaegerTraces(query, 'apiserver'))
          for (const s of t.spans)
            for (const link of links(s)) if (link.traceID === reconcile.traceID) found.set(link.spanID, s);
        return requests.every((r) => found.has(r.spanID)) && found;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    for (const request of requests) {
      const server = linkedBy.get(request.spanID)!;
      expect(server.traceID).not.toBe(reconcile.traceID);
      expect(parentOf(server)).toBeUndefined();
    }
    const create = linkedBy.get(requests.find((r) => r.operationName === 'CREATE deployments')!.spanID)!;
    expect(pathOf(create)).toBe(`/apis/apps/v1/namespaces/${NS}/deployments`);
  });
});
