// KubeClient's connections to an API server over HTTP/2 (what undici negotiates with kube-apiserver
// over TLS), on loopback: a connection that goes silent without a close must not take every later
// request down with it.
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createSecureServer } from 'node:http2';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { BlackHoleProxy } from '../../harness/chaos/chaos.ts';
import { eventually } from '../../harness/process/poll.ts';
import { DEPLOYMENTS } from '../../operator/src/controller/kube-api.ts';
import { KubeClient } from '../../operator/src/controller/kube-client.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { createCertificateAuthority, issueServingCertificate } from '../../operator/src/webhook/certificates.ts';

/** A TLS HTTP/2 server on loopback (as kube-apiserver), its CA, and the number of connections it took. */
async function apiServer(handler: Parameters<typeof createSecureServer>[1]) {
  const ca = await createCertificateAuthority({ commonName: 'test CA', validityMs: 3_600_000 });
  const serving = await issueServingCertificate(ca, {
    commonName: '127.0.0.1',
    dnsNames: [],
    ipAddresses: ['127.0.0.1'],
    validityMs: 3_600_000,
  });
  const state = { sessions: 0, connections: 0, pings: 0 };
  const server = createSecureServer({ cert: serving.cert, key: serving.key, allowHTTP1: true }, handler);
  server.on('session', (session) => {
    state.sessions += 1;
    session.on('ping', () => (state.pings += 1));
  });
  server.on('secureConnection', () => (state.connections += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, ca: ca.cert, port: (server.address() as AddressInfo).port, state };
}

function kubeConfigFor(port: number, ca: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'local', server: `https://127.0.0.1:${port}`, caData: Buffer.from(ca).toString('base64') }],
    users: [{ name: 'u', token: 'token' }],
    contexts: [{ name: 'ctx', cluster: 'local', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

/** Starts a watch of Deployments; resolves the events so far and how it ended, once it ends. */
function watchUntilDone(client: KubeClient, inactivityTimeoutMs: number) {
  const events: Array<[string, string | undefined]> = [];
  let controller: Promise<AbortController> | undefined;
  const ended = new Promise<{ error: unknown }>((resolve) => {
    controller = client.watch(
      DEPLOYMENTS,
      'ns',
      { resourceVersion: '1' },
      (type, object) => events.push([type, object.metadata?.name]),
      (error) => resolve({ error }),
      inactivityTimeoutMs,
    );
  });
  // Stops it once it is started, however long that takes.
  return { events, ended, stop: async () => (await controller)?.abort() };
}

test.each([
  ['its own timeout', { timeoutMs: 500 }, undefined],
  // The leader's Lease renewals: a deadline of the caller's, well before the request timeout.
  ["the caller's deadline", {}, 500],
])(
  'after a request times out (%s) on a connection that went silent, the next request goes over a new connection and succeeds',
  async (_, options, deadlineMs) => {
    const api = await apiServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' }, httpVersion: request.httpVersion }));
    });
    const proxy = await BlackHoleProxy.start({ host: '127.0.0.1', port: api.port });
    try {
      const client = new KubeClient(kubeConfigFor(proxy.port, api.ca), options);
      const get = () =>
        client.get<{ httpVersion: string }>(
          DEPLOYMENTS,
          { namespace: 'ns', name: 'a' },
          { signal: deadlineMs === undefined ? undefined : AbortSignal.timeout(deadlineMs) },
        );
      // Two requests share one HTTP/2 connection.
      expect((await get())?.httpVersion).toBe('2.0');
      await get();
      expect(api.state.sessions).toBe(1);

      proxy.blackHole();
      await expect(get()).rejects.toThrow(/GET \/apis\/apps\/v1\/namespaces\/ns\/deployments\/a: .*timeout/);
      expect((await get())?.httpVersion).toBe('2.0');
      expect(api.state.sessions).toBe(2);
    } finally {
      await proxy.close();
      api.server.close();
    }
  },
);

test('with http2 false, requests go over HTTP/1.1, never HTTP/2, even where the server offers it', async () => {
  const api = await apiServer((request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' }, httpVersion: request.httpVersion }));
  });
  try {
    const client = new KubeClient(kubeConfigFor(api.port, api.ca), { http2: false });
    const get = () => client.get<{ httpVersion: string }>(DEPLOYMENTS, { namespace: 'ns', name: 'a' });
    expect((await get())?.httpVersion).toBe('1.1');
    expect((await get())?.httpVersion).toBe('1.1');
    expect(api.state.sessions).toBe(0);
  } finally {
    api.server.close();
  }
});

test("a stream's error that comes after undici let go of the stream (the API server restarting) does not end the process", async () => {
  const api = await apiServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{}');
  });
  try {
    // Making the client's pool installs the sink for every HTTP/2 stream the process opens.
    new KubeClient(kubeConfigFor(api.port, api.ca));
    const session = connect(`https://127.0.0.1:${api.port}`, { ca: api.ca });
    // The session's own error, which undici listens to on its sessions.
    session.on('error', () => {});
    // A stream no one listens to, as one undici has released: its session is destroyed with the
    // error undici's onHttp2SocketEnd gives, which Node emits on the stream.
    const stream = session.request({ ':path': '/' });
    // The sink's listener: the test adds none. (One per test file of this jest worker that made a
    // client: the channel is the process's, the module and its once-only flag each file's own.)
    expect(stream.listenerCount('error')).toBeGreaterThan(0);
    // (Not events.once: it listens for 'error' itself, and would reject.)
    const closed = new Promise((resolve) => stream.on('close', resolve));
    session.destroy(new Error('other side closed'));
    await closed;
    expect(stream.destroyed).toBe(true);
  } finally {
    api.server.close();
  }
});

describe('a watch', () => {
  /** Watch events as the API server streams them: one JSON object per line, in chunks that split lines. */
  const streaming = async () =>
    apiServer((request, response) => {
      if (!request.url?.includes('watch=true')) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' });
      const lines = ['a', 'b', 'c']
        .map((name) => `${JSON.stringify({ type: 'ADDED', object: { metadata: { name, namespace: 'ns' } } })}\n`)
        .join('');
      // Split mid-line, mid-character of nothing in particular: the decoder must join them.
      response.write(lines.slice(0, 30));
      setTimeout(() => response.write(lines.slice(30, 100)), 20);
      setTimeout(() => response.write(lines.slice(100)), 40);
      if (request.url.includes('timeoutSeconds=1')) setTimeout(() => response.end(), 80);
    });

  test('decodes events across chunk boundaries, and ends without an error when the server closes it', async () => {
    const api = await streaming();
    try {
      const client = new KubeClient(kubeConfigFor(api.port, api.ca));
      const events: string[] = [];
      const error = await new Promise((resolve) => {
        void client.watch(
          DEPLOYMENTS,
          'ns',
          { timeoutSeconds: 1 },
          (type, object) => events.push(`${type} ${object.metadata?.name}`),
          resolve,
          60_000,
        );
      });
      expect(events).toEqual(['ADDED a', 'ADDED b', 'ADDED c']);
      expect(error).toBeNull();
    } finally {
      api.server.close();
    }
  });

  test('ends with a TimeoutError after its inactivity timeout, and without an error when stopped', async () => {
    const api = await streaming();
    try {
      const client = new KubeClient(kubeConfigFor(api.port, api.ca));
      // Long enough that a busy machine delivers all three chunks (20 ms apart) within it.
      const silent = watchUntilDone(client, 2_000);
      const { error } = await silent.ended;
      expect(silent.events).toHaveLength(3);
      expect(error).toBeInstanceOf(DOMException);
      expect((error as DOMException).name).toBe('TimeoutError');
      const stopped = watchUntilDone(client, 60_000);
      await eventually('the second watch streaming', () => stopped.events.length === 3);
      await stopped.stop();
      expect((await stopped.ended).error).toBeNull();
    } finally {
      api.server.close();
    }
  });

  test('to a server that accepts the connection and never answers: its inactivity timeout and its signal each end it, with no answer to wait for', async () => {
    const sockets: Socket[] = [];
    const silent = createNetServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const client = new KubeClient(kubeConfigFor((silent.address() as AddressInfo).port, 'no CA: no handshake'));
      const { error } = await watchUntilDone(client, 500).ended;
      expect(error).toBeInstanceOf(DOMException);
      expect((error as DOMException).name).toBe('TimeoutError');
      const stop = new AbortController();
      const ended = new Promise((resolve) => {
        void client.watch(DEPLOYMENTS, 'ns', {}, () => undefined, resolve, 60_000, { signal: stop.signal });
      });
      stop.abort();
      expect(await ended).toBeNull();
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
    // Not a speed limit: undici's own connect timeout (10 s) would end each watch too, with the
    // same outcome, so the test's limit is what tells a watch its signal ended from one it did not.
  }, 9_000);

  test("a refusal ends it with the API server's status", async () => {
    const api = await apiServer((_request, response) => {
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'deployments is forbidden: no' }));
    });
    try {
      const client = new KubeClient(kubeConfigFor(api.port, api.ca));
      const { error } = await watchUntilDone(client, 60_000).ended;
      expect(error).toMatchObject({ code: 403, reason: 'Forbidden', message: 'deployments is forbidden: no' });
    } finally {
      api.server.close();
    }
  });

  test('on a connection that goes silent ends once its PINGs go unanswered, long before its inactivity timeout, and the next watch takes a new connection', async () => {
    const api = await apiServer((request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', namespace: 'ns' } } })}\n`);
      request.on('close', () => response.end());
    });
    const proxy = await BlackHoleProxy.start({ host: '127.0.0.1', port: api.port });
    try {
      const metrics = new OperatorMetrics({ processMetrics: false });
      // client-go's 30 s and 15 s, scaled down: silent 1.5 s counts as dead.
      const client = new KubeClient(kubeConfigFor(proxy.port, api.ca), {
        metrics,
        connectionHealth: { readIdleMs: 1_000, pingTimeoutMs: 500 },
      });
      const first = watchUntilDone(client, 60_000);
      // Alive: with nothing but PINGs and their acks on it (one each 500 ms), it outlives readIdle + pingTimeout twice over.
      await eventually('6 PINGs answered', () => api.state.pings >= 6);
      expect(first.events).toEqual([['ADDED', 'a']]);
      expect(await metrics.registry.getSingleMetricAsString('rest_client_dead_connections_total')).toMatch(/ 0$/m);
      proxy.blackHole();
      const blackHoledAt = performance.now();
      const { error } = await first.ended;
      expect(String(error)).toMatch(/not even a PING ack|closed|terminated|other side closed/);
      // Ended by the health check, not by the watch's 60 s inactivity timeout.
      expect(performance.now() - blackHoledAt).toBeLessThan(30_000);
      expect(await metrics.registry.getSingleMetricAsString('rest_client_dead_connections_total')).toMatch(/ 1$/m);
      const second = watchUntilDone(client, 60_000);
      await eventually('the next watch streaming', () => second.events.length === 1);
      expect(api.state.sessions).toBe(2);
      await second.stop();
      await second.ended;
    } finally {
      await proxy.close();
      api.server.close();
    }
  });
});

describe('KubeClient.fromEnvironment', () => {
  test('outside a pod with neither KUBECONFIG nor ~/.kube/config: one line that says what to set, not a request to localhost:8080', () => {
    const home = mkdtempSync(join(tmpdir(), 'no-kubeconfig-'));
    try {
      expect(() => KubeClient.fromEnvironment({}, { HOME: home })).toThrow(
        'no cluster to connect to: set KUBECONFIG (for the local cluster of npm run cluster:up: export KUBECONFIG=$PWD/.cluster/kubeconfig), or run the operator in a pod',
      );
      // A kubeconfig where client-node looks for one is used.
      mkdirSync(join(home, '.kube'));
      writeFileSync(
        join(home, '.kube', 'config'),
        'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
      );
      const previous = process.env.HOME;
      process.env.HOME = home; // client-node reads ~ from the process environment
      try {
        expect(KubeClient.fromEnvironment({}, { HOME: home }).kubeConfig.getCurrentCluster()?.server).toBe(
          'https://127.0.0.1:6443',
        );
      } finally {
        process.env.HOME = previous;
      }
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
