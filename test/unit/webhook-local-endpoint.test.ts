import { Writable } from 'node:stream';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import { ENDPOINT_SLICES, type KubeObject, SERVICES } from '../../operator/src/controller/kube-api.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import {
  endpointSliceName,
  LocalServiceEndpoint,
  type LocalServiceEndpointOptions,
} from '../../operator/src/webhook/local-service-endpoint.ts';

const NS = 'website-system';
const SERVICE = 'website-operator-webhook';
const SLICE = 'website-operator-webhook-laptop';

/** dist/'s webhook Service, as the API server stores it. */
const service = (ports: Array<{ name?: string; port: number }> = [{ name: 'webhook', port: 443 }]): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: SERVICE, namespace: NS },
  spec: { type: 'ClusterIP', selector: { 'app.kubernetes.io/name': 'website-operator' }, ports },
});

/** The API server's own endpoint, as it writes it. */
const kubernetesSlice = (...addresses: string[]): KubeObject => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
  addressType: 'IPv4',
  endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
});

async function setup(
  options: Partial<LocalServiceEndpointOptions> = {},
  objects: Array<[typeof SERVICES, KubeObject]> = [[SERVICES, service()]],
) {
  const api = new FakeKubeApi();
  for (const [type, object] of objects) await api.create(type, object);
  const logs: Array<Record<string, any>> = [];
  const logger = createLogger(
    'debug',
    new Writable({
      write: (chunk, _, done) => {
        logs.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );
  const endpoint = new LocalServiceEndpoint({
    client: api,
    namespace: NS,
    port: 9443,
    identity: 'laptop',
    logger,
    localAddresses: () => ['127.0.0.1', '::1', '192.168.1.20', 'fd00:1::20'],
    ...options,
  });
  return { api, endpoint, logs, mark: api.requests.length };
}

describe("LocalServiceEndpoint: an operator outside the cluster as its webhook Service's endpoint", () => {
  test("publishes an EndpointSlice for the Service at the given address, with the Service port's name and the server's port; an unchanged one is not written again", async () => {
    const { api, endpoint, mark } = await setup({ address: '10.20.0.5' });
    expect(await endpoint.sync()).toBe(true);
    expect(api.since(mark)).toEqual(['GET services 200', 'LIST endpointslices 200', 'APPLY endpointslices 201']);
    const slice = api.peek<KubeObject>(ENDPOINT_SLICES, NS, SLICE)!;
    expect(slice.metadata!.labels).toMatchObject({
      'kubernetes.io/service-name': SERVICE,
      'endpointslice.kubernetes.io/managed-by': 'website-operator',
    });
    expect({ addressType: slice.addressType, endpoints: slice.endpoints, ports: slice.ports }).toEqual({
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.20.0.5'], conditions: { ready: true } }],
      ports: [{ name: 'webhook', port: 9443, protocol: 'TCP' }],
    });

    const again = api.requests.length;
    await endpoint.sync();
    expect(api.since(again)).toEqual(['GET services 200', 'LIST endpointslices 200']);
  });

  test('a deleted or changed EndpointSlice is written again at the next check', async () => {
    const { api, endpoint } = await setup({ address: '10.20.0.5' });
    await endpoint.sync();
    await api.delete(ENDPOINT_SLICES, { namespace: NS, name: SLICE });
    await endpoint.sync();
    expect(api.peek<KubeObject>(ENDPOINT_SLICES, NS, SLICE)!.endpoints).toEqual([
      { addresses: ['10.20.0.5'], conditions: { ready: true } },
    ]);
    api.modify(ENDPOINT_SLICES, NS, SLICE, (slice) => {
      slice.ports = [{ name: 'webhook', port: 1, protocol: 'TCP' }];
    });
    const mark = api.requests.length;
    await endpoint.sync();
    expect(api.since(mark)).toContain('APPLY endpointslices 200');
    expect(api.peek<KubeObject>(ENDPOINT_SLICES, NS, SLICE)!.ports).toEqual([
      { name: 'webhook', port: 9443, protocol: 'TCP' },
    ]);
  });

  test('an unnamed Service port is matched by the empty name, as the API server matches it', async () => {
    const { api, endpoint } = await setup({ address: '10.20.0.5' }, [[SERVICES, service([{ port: 443 }])]]);
    await endpoint.sync();
    expect(api.peek<KubeObject>(ENDPOINT_SLICES, NS, SLICE)!.ports).toEqual([
      { name: '', port: 9443, protocol: 'TCP' },
    ]);
  });

  test("without an address: the API server's own address when it is one of this machine's (it runs here), IPv6 included", async () => {
    for (const address of ['192.168.1.20', 'fd00:1::20']) {
      const { api, endpoint } = await setup({}, [
        [SERVICES, service()],
        [ENDPOINT_SLICES, kubernetesSlice(address)],
      ]);
      await endpoint.sync();
      const slice = api.peek<KubeObject>(ENDPOINT_SLICES, NS, SLICE)!;
      expect([slice.addressType, slice.endpoints]).toEqual([
        address.includes(':') ? 'IPv6' : 'IPv4',
        [{ addresses: [address], conditions: { ready: true } }],
      ]);
    }
  });

  test('an API server on another machine cannot call this process: one error saying conversion is unavailable, nothing written, no retries', async () => {
    const { api, endpoint, logs, mark } = await setup({ checkIntervalMs: 10 }, [
      [SERVICES, service()],
      [ENDPOINT_SLICES, kubernetesSlice('172.18.0.2')],
    ]);
    const stop = new AbortController();
    const run = endpoint.run(stop.signal);
    await new Promise((r) => setTimeout(r, 100));
    stop.abort();
    await run;
    expect(api.since(mark)).toEqual(['GET endpointslices 200']);
    const errors = logs.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toMatch(
      /^conversion webhook unavailable: the API server \(advertising 172\.18\.0\.2\) does not run on this machine/,
    );
    expect(errors[0].msg).toMatch(/set WEBHOOK_ADVERTISE_ADDRESS/);
  });

  test("not allowed to read the API server's address: the error says what to grant or set", async () => {
    const { api, endpoint } = await setup();
    api.failWith(
      (r) => r.resource === 'endpointslices' && r.namespace === 'default',
      new ApiError(403, 'Forbidden', 'endpointslices.discovery.k8s.io "kubernetes" is forbidden'),
    );
    await expect(endpoint.sync()).rejects.toThrow(
      /is forbidden: finding out whether the API server runs on this machine takes reading its address \(the EndpointSlice default\/kubernetes\); or set WEBHOOK_ADVERTISE_ADDRESS/,
    );
  });

  test('a missing Service is an error naming it and the manifest that declares it, retried with backoff', async () => {
    const { endpoint, logs } = await setup({ address: '10.20.0.5' }, []);
    await expect(endpoint.sync()).rejects.toThrow(
      `the Service ${NS}/${SERVICE} does not exist: the CRD's conversion webhook calls it; apply the operator's manifests (dist/website-operator/website-operator.yaml declares it)`,
    );
    const stop = new AbortController();
    const run = endpoint.run(stop.signal);
    await new Promise((r) => setTimeout(r, 50));
    stop.abort();
    await run;
    const error = logs.find((l) => l.level === 'error')!;
    expect(error).toMatchObject({
      msg: 'conversion webhook unavailable: could not make this process an endpoint of the webhook Service',
      retryInMs: 1000,
    });
    expect(error.error).toMatch(/does not exist/);
  });

  test("other ready endpoints of the Service (the simulated Deployment's pods) are warned about once per change", async () => {
    const controllerSlice = (addresses: string[]): KubeObject => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${SERVICE}-abcde`,
        namespace: NS,
        labels: {
          'kubernetes.io/service-name': SERVICE,
          'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
        },
      },
      addressType: 'IPv4',
      endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
      ports: [{ name: 'webhook', port: 9443, protocol: 'TCP' }],
    });
    const { api, endpoint, logs } = await setup({ address: '10.20.0.5' }, [
      [SERVICES, service()],
      [ENDPOINT_SLICES, controllerSlice([])],
    ]);
    await endpoint.sync();
    expect(logs.filter((l) => l.level === 'warn')).toEqual([]);
    api.modify(ENDPOINT_SLICES, NS, `${SERVICE}-abcde`, (slice) => {
      slice.endpoints = controllerSlice(['10.0.0.7', '10.0.0.6']).endpoints;
    });
    await endpoint.sync();
    await endpoint.sync();
    const warnings = logs.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0].endpoints).toEqual(['10.0.0.6', '10.0.0.7']);
    expect(warnings[0].msg).toMatch(/scale that Deployment to 0 while the operator runs here/);
  });

  test('stopping withdraws the EndpointSlice, so the API server stops calling a process that is gone', async () => {
    const { api, endpoint, logs } = await setup({ address: '10.20.0.5' });
    const stop = new AbortController();
    const run = endpoint.run(stop.signal);
    while (!api.peek(ENDPOINT_SLICES, NS, SLICE)) await new Promise((r) => setTimeout(r, 5));
    stop.abort();
    await run;
    expect(api.peek(ENDPOINT_SLICES, NS, SLICE)).toBeUndefined();
    expect(logs.map((l) => l.msg)).toContain('removed this process from the webhook Service endpoints');
  });

  test('stopping does not wait for a check the API server does not answer: the EndpointSlice is withdrawn at once', async () => {
    const { api, endpoint } = await setup({ address: '10.20.0.5', checkIntervalMs: 10 });
    const list = api.list.bind(api);
    let hang = false;
    api.list = ((...args: Parameters<typeof list>) =>
      hang ? new Promise(() => undefined) : list(...args)) as typeof api.list;
    const stop = new AbortController();
    const run = endpoint.run(stop.signal);
    while (!api.peek(ENDPOINT_SLICES, NS, SLICE)) await new Promise((r) => setTimeout(r, 5));
    hang = true;
    await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    stop.abort();
    await run;
    expect(Date.now() - started).toBeLessThan(500);
    expect(api.peek(ENDPOINT_SLICES, NS, SLICE)).toBeUndefined();
  });

  test('stopping does not wait more than 2 s for an API server that does not answer; the warning says how to clean up', async () => {
    const { api, endpoint, logs } = await setup({ address: '10.20.0.5' });
    await endpoint.sync();
    api.delete = () => new Promise(() => undefined);
    const started = Date.now();
    await endpoint.withdraw();
    expect(Date.now() - started).toBeLessThan(3000);
    const warning = logs.find((l) => l.level === 'warn')!;
    expect(warning.error).toBe('no answer within 2000 ms');
    expect(warning.msg).toMatch(`kubectl delete endpointslice ${SLICE} -n ${NS}`);
  });

  test("EndpointSlice names: the Service's name and the identity, made a valid object name", () => {
    expect(endpointSliceName(SERVICE, 'laptop')).toBe(SLICE);
    expect(endpointSliceName(SERVICE, 'MacBook-Pro.local')).toBe(`${SERVICE}-macbook-pro.local`);
    expect(endpointSliceName(SERVICE, 'dev_box #2')).toBe(`${SERVICE}-dev-box-2`);
    expect(endpointSliceName(SERVICE, '__')).toBe(`${SERVICE}-local`);
    expect(endpointSliceName(SERVICE, 'x'.repeat(300))).toHaveLength(253);
  });
});
