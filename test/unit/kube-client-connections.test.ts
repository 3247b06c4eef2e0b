// KubeClient's connections to an API server over HTTP/2 (what undici negotiates with kube-apiserver
// over TLS), on loopback: a connection that goes silent without a close must not take every later
// request down with it.
import { once } from 'node:events';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { DEPLOYMENTS, KubeClient } from '../../operator/src/controller/kube-client.ts';
import { createCertificateAuthority, issueServingCertificate } from '../../operator/src/webhook/certificates.ts';
import { BlackHoleProxy } from '../support/chaos.ts';

test('after a request times out on a connection that went silent, the next request goes over a new connection and succeeds', async () => {
  const ca = await createCertificateAuthority({ commonName: 'test CA', validityMs: 3_600_000 });
  const serving = await issueServingCertificate(ca, {
    commonName: '127.0.0.1',
    dnsNames: [],
    ipAddresses: ['127.0.0.1'],
    validityMs: 3_600_000,
  });
  let sessions = 0;
  const server = createSecureServer({ cert: serving.cert, key: serving.key, allowHTTP1: true }, (request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' }, httpVersion: request.httpVersion }));
  });
  server.on('session', () => (sessions += 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const proxy = await BlackHoleProxy.start({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  try {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'local', server: `https://127.0.0.1:${proxy.port}`, caData: Buffer.from(ca.cert).toString('base64') },
      ],
      users: [{ name: 'u', token: 'token' }],
      contexts: [{ name: 'ctx', cluster: 'local', user: 'u' }],
      currentContext: 'ctx',
    });
    const client = new KubeClient(kc, { timeoutMs: 500 });
    const get = () => client.get<{ httpVersion: string }>(DEPLOYMENTS, { namespace: 'ns', name: 'a' });
    // Two requests share one HTTP/2 connection.
    expect((await get())?.httpVersion).toBe('2.0');
    await get();
    expect(sessions).toBe(1);

    proxy.blackHole();
    await expect(get()).rejects.toThrow(/GET \/apis\/apps\/v1\/namespaces\/ns\/deployments\/a: .*timeout/);
    expect((await get())?.httpVersion).toBe('2.0');
    expect(sessions).toBe(2);
  } finally {
    await proxy.close();
    server.close();
  }
});
