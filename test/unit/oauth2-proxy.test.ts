import { chartInMemory } from '../../harness/manifests.ts';
import { JaegerProduction, ProductionStorage } from '../../lib/tracing/jaeger-production.ts';
import { oauth2ProxySidecar, oidcIssuerPort, type QueryOidcProps } from '../../lib/tracing/oauth2-proxy.ts';

// The flags are proven against a real oauth2-proxy and Keycloak in test/trace/oidc.test.ts; these
// pin what the construct writes, and its errors.
const OIDC: QueryOidcProps = {
  issuerUrl: 'https://login.example.com/realms/tracing',
  clientId: 'jaeger',
  clientSecret: { secretName: 'oidc', key: 'client-secret' },
  cookieSecret: { secretName: 'oidc', key: 'cookie-secret' },
  redirectUrl: 'https://jaeger.example.com/oauth2/callback',
};
const UPSTREAM = 'http://127.0.0.1:16686';
const args = (oidc: Partial<QueryOidcProps> = {}) =>
  oauth2ProxySidecar('W', { ...OIDC, ...oidc }, UPSTREAM).container.args!;

describe('oauth2-proxy in front of Jaeger query', () => {
  test('OIDC puts oauth2-proxy in front: Jaeger listens on localhost, the Service reaches only the proxy', () => {
    const chart = chartInMemory();
    const j = new JaegerProduction(chart, 'j', {
      storage: ProductionStorage.cassandra({ servers: ['cassandra:9042'] }),
      oidc: OIDC,
    });
    expect((j.queryConfig as any).extensions.jaeger_query.http.endpoint).toBe('127.0.0.1:16686');
    const objects = chart.toJson();
    const query = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'jaeger-query');
    const proxy = query.spec.template.spec.containers.find((x: any) => x.name === 'oauth2-proxy');
    expect(proxy.image).toBe('quay.io/oauth2-proxy/oauth2-proxy:v7.15.6');
    expect(proxy.args).toEqual(
      expect.arrayContaining([
        '--provider=oidc',
        '--oidc-issuer-url=https://login.example.com/realms/tracing',
        '--upstream=http://127.0.0.1:16686',
      ]),
    );
    expect(proxy.env.every((e: any) => e.valueFrom?.secretKeyRef)).toBe(true);
    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'jaeger-query');
    expect(service.spec.ports.map((p: any) => [p.name, p.port])).toEqual([
      ['metrics', 8888],
      ['query', 4180],
    ]);
    expect(j.oidcIssuerPort).toBe(443);
  });

  test('the provider sends users back to the redirect URL given, not to one built from the request (https whenever the cookie is Secure)', () => {
    expect(args()).toContain('--redirect-url=https://jaeger.example.com/oauth2/callback');
    expect(args()).toContain('--cookie-secure=true');
  });

  test("signing out ends the provider's session too when its end-session URL is given", () => {
    expect(args().filter((a) => a.startsWith('--backend-logout-url'))).toEqual([]);
    const logout = 'https://login.example.com/realms/tracing/protocol/openid-connect/logout?id_token_hint={id_token}';
    expect(args({ backendLogoutUrl: logout })).toContain(`--backend-logout-url=${logout}`);
  });

  test('logins use PKCE with S256, which a client requiring PKCE demands', () => {
    expect(args()).toContain('--code-challenge-method=S256');
  });

  test('forwarded headers are believed from the trusted proxies only, and from nobody by default', () => {
    expect(args().filter((a) => a.startsWith('--reverse-proxy') || a.startsWith('--trusted-proxy-ip'))).toEqual([]);
    expect(args({ trustedProxies: ['10.42.0.0/16', '10.0.0.7/32'] })).toEqual(
      expect.arrayContaining([
        '--reverse-proxy=true',
        '--trusted-proxy-ip=10.42.0.0/16',
        '--trusted-proxy-ip=10.0.0.7/32',
      ]),
    );
  });

  test('the query API answers 401 rather than redirecting, and takes bearer tokens the issuer signed', () => {
    expect(args()).toEqual(expect.arrayContaining(['--api-route=^/api/', '--skip-jwt-bearer-tokens=true']));
  });

  test('settings from a Secret become the variables oauth2-proxy reads, never flags', () => {
    const ref = (key: string) => ({ secretName: 'jaeger-oidc', key });
    const { container: c } = oauth2ProxySidecar(
      'W',
      {
        ...OIDC,
        issuerUrl: ref('issuer-url'),
        clientId: ref('client-id'),
        redirectUrl: ref('redirect-url'),
        backendLogoutUrl: ref('backend-logout-url'),
      },
      UPSTREAM,
    );
    expect(c.args!.filter((a) => /^--(oidc-issuer-url|client-id|redirect-url|backend-logout-url)=/.test(a))).toEqual(
      [],
    );
    expect(c.env!.map((e) => [e.name, e.valueFrom?.secretKeyRef?.key, e.valueFrom?.secretKeyRef?.optional])).toEqual([
      ['OAUTH2_PROXY_OIDC_ISSUER_URL', 'issuer-url', undefined],
      ['OAUTH2_PROXY_CLIENT_ID', 'client-id', undefined],
      ['OAUTH2_PROXY_REDIRECT_URL', 'redirect-url', undefined],
      // The one key a Secret may leave out.
      ['OAUTH2_PROXY_BACKEND_LOGOUT_URL', 'backend-logout-url', true],
      ['OAUTH2_PROXY_CLIENT_SECRET', 'client-secret', undefined],
      ['OAUTH2_PROXY_COOKIE_SECRET', 'cookie-secret', undefined],
    ]);
    expect(oidcIssuerPort({ ...OIDC, issuerUrl: ref('issuer-url') })).toBe(443);
    expect(oidcIssuerPort({ ...OIDC, issuerUrl: ref('issuer-url'), issuerPort: 8443 })).toBe(8443);
  });

  test.each([
    [{ redirectUrl: 'https://jaeger.example.com/' }, 'must end in /oauth2/callback'],
    [
      { redirectUrl: 'http://jaeger.example.com/oauth2/callback' },
      'is plain http: browsers would drop the Secure session cookie',
    ],
    [{ redirectUrl: 'jaeger.example.com/oauth2/callback' }, 'is not a URL'],
    [{ issuerUrl: 'ftp://login.example.com' }, 'must be an http(s) URL'],
    [{ trustedProxies: [] }, 'oidc.trustedProxies is empty'],
    [{ trustedProxies: ['ingress.example.com'] }, "'ingress.example.com' is not a CIDR"],
  ] as [Partial<QueryOidcProps>, string][])('refuses %j', (oidc, message) => {
    expect(() => args(oidc)).toThrow(message);
  });

  test("a private provider CA from a Secret is trusted beside the image's public CAs, and its key may be missing", () => {
    const { container, volumes } = oauth2ProxySidecar(
      'W',
      { ...OIDC, providerCa: { secretName: 'jaeger-oidc', key: 'provider-ca.crt' } },
      UPSTREAM,
    );
    // Not --provider-ca-file: a missing file would stop oauth2-proxy; an empty CA folder does not.
    expect(container.args!.some((a) => a.startsWith('--provider-ca-file'))).toBe(false);
    expect(volumes).toEqual([
      {
        name: 'provider-ca',
        secret: { secretName: 'jaeger-oidc', items: [{ key: 'provider-ca.crt', path: 'ca.crt' }], optional: true },
      },
    ]);
    expect(container.volumeMounts).toEqual([
      { name: 'provider-ca', mountPath: '/etc/oauth2-proxy/provider-ca', readOnly: true },
    ]);
    expect(container.env).toContainEqual({
      name: 'SSL_CERT_DIR',
      value: '/etc/ssl/certs:/etc/pki/tls/certs:/etc/oauth2-proxy/provider-ca',
    });
    const plain = oauth2ProxySidecar('W', OIDC, UPSTREAM);
    expect(plain.volumes).toEqual([]);
    expect(plain.container.env!.some((e) => e.name === 'SSL_CERT_DIR')).toBe(false);
  });

  test('plain http is accepted on loopback (a port-forward), where browsers keep Secure cookies', () => {
    for (const host of ['localhost:4180', '127.0.0.1:4180', '[::1]:4180'])
      expect(args({ redirectUrl: `http://${host}/oauth2/callback` })).toContain(
        `--redirect-url=http://${host}/oauth2/callback`,
      );
  });
});
