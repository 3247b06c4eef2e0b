// OIDC on the UI, for real: the query pod of dist/tracing-production-elasticsearch/ as synthesized
// (Jaeger query on its loopback, oauth2-proxy v7.15.6 beside it with the chart's flags, settings
// from the Secret jaeger-oidc), a real Keycloak 26 as the provider (a client that requires PKCE
// S256), and Chromium logging in as a person does.
import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchBrowser } from '../../harness/process/browser.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import type { KeycloakUser } from '../../harness/trace/keycloak.ts';
import { chartManifests } from '../../harness/trace/local-stack.ts';
import { CHART, esAddress, productionSecrets } from '../../harness/trace/production.ts';
import { type SharedServices, sharedServices } from '../../harness/trace/services.ts';
import { type LocalStack, startStack, synthYaml, testPki } from '../../harness/trace/traces.ts';
import { JaegerProduction, ProductionStorage } from '../../lib/tracing/jaeger-production.ts';

const QUERY_PODS = ['jaeger-query', 'jaeger-query-oauth2-proxy'];

describe('OIDC in front of Jaeger query, with Keycloak and Chromium', () => {
  const pki = testPki(['jaeger-collector.tracing.svc']);
  let services: SharedServices;
  let stack: LocalStack;
  let browser: Browser;
  let ui: string;

  beforeAll(async () => {
    services = await sharedServices();
    const port = await freePort();
    ui = `http://127.0.0.1:${port}`;
    stack = await startStack(CHART, {
      only: QUERY_PODS,
      secrets: productionSecrets(services, pki, `${ui}/oauth2/callback`),
      extraAddresses: esAddress(services),
      preferredPorts: { 'jaeger-query/query': port },
    });
    expect(stack.url('jaeger-query', 'query')).toBe(ui);
    browser = await launchBrowser();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  });

  /** Logs `user` in from Jaeger's search page in `context`; resolves on the page the provider sent the browser back to. */
  async function logIn(context: BrowserContext, user: KeycloakUser, at = ui): Promise<{ page: Page; status: number }> {
    const page = await context.newPage();
    await page.goto(`${at}/search`);
    await page.waitForURL(/\/realms\/website-stack\/protocol\/openid-connect\/auth/);
    await page.fill('#username', user.username);
    await page.fill('#password', user.password);
    const back = page.waitForResponse((r) => r.url().startsWith(`${at}/oauth2/callback`));
    // Registered before the click: the redirect to the page asked for follows the callback at once.
    const landed = page.waitForResponse((r) => r.url() === `${at}/search`).catch(() => undefined);
    await page.click('#kc-login');
    const callback = await back;
    // oauth2-proxy answers the callback with a redirect to the page asked for, or with its error page.
    if (callback.status() !== 302) return { page, status: callback.status() };
    return { page, status: (await landed)?.status() ?? 0 };
  }

  test("an unauthenticated page lands on the provider's login, asking for PKCE S256 and coming back to the redirect URL given", async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`${ui}/search`);
      await page.waitForURL(/\/realms\/website-stack\/protocol\/openid-connect\/auth/);
      const login = new URL(page.url());
      expect(login.origin + login.pathname).toBe(`${services.keycloak.issuerUrl}/protocol/openid-connect/auth`);
      expect(login.searchParams.get('code_challenge_method')).toBe('S256');
      expect(login.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // http, as given: with only --cookie-secure, oauth2-proxy sent https://, which Keycloak refused.
      expect(login.searchParams.get('redirect_uri')).toBe(`${ui}/oauth2/callback`);
      expect(await page.locator('#kc-login').count()).toBe(1);
    } finally {
      await context.close();
    }
  });

  test('logging in returns to Jaeger; the session cookie is HttpOnly, Secure and SameSite=Lax and opens the query API; after sign-out the API answers 401', async () => {
    const context = await browser.newContext();
    try {
      const { page, status } = await logIn(context, services.keycloak.users.allowed);
      expect(status).toBe(200);
      expect(page.url()).toBe(`${ui}/search`);
      const cookies = await context.cookies(ui);
      const session = cookies.find((c) => c.name === '_oauth2_proxy');
      expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
      const api = await context.request.get(`${ui}/api/services`);
      expect(api.status()).toBe(200);
      expect(await api.json()).toHaveProperty('data');

      // Signing out ends Keycloak's session too (the chart's backend logout URL): the browser is
      // asked to log in again rather than let straight back in by single sign-on.
      await page.goto(`${ui}/oauth2/sign_out`);
      await page.goto(`${ui}/search`);
      await page.waitForURL(/\/realms\/website-stack\/protocol\/openid-connect\/auth/);
      expect(await page.locator('#kc-login').count()).toBe(1);
      expect((await context.cookies(ui)).find((c) => c.name === '_oauth2_proxy')).toBeUndefined();
      expect((await context.request.get(`${ui}/api/services`)).status()).toBe(401);
    } finally {
      await context.close();
    }
    // A new browser, with no session, is asked to log in, not let through.
    const fresh = await browser.newContext();
    try {
      expect((await fresh.request.get(`${ui}/api/services`)).status()).toBe(401);
    } finally {
      await fresh.close();
    }
  });

  test('with emailDomains set (flags written literally), a user outside them is refused after logging in and with a token (403); one inside gets in', async () => {
    const { keycloak } = services;
    const port = await freePort();
    const restrictedUi = `http://127.0.0.1:${port}`;
    const yaml = synthYaml((chart) => {
      new JaegerProduction(chart, 'jaeger', {
        storage: ProductionStorage.elasticsearch({
          serverUrls: ['https://elasticsearch-es-http.tracing.svc:9200'],
          caSecretName: 'elasticsearch-es-http-certs-public',
          credentials: { secretName: 'jaeger-elasticsearch' },
          version: 8,
          clientHealthCheck: false,
        }),
        oidc: {
          issuerUrl: keycloak.issuerUrl,
          clientId: keycloak.clientId,
          clientSecret: { secretName: 'jaeger-oidc', key: 'client-secret' },
          cookieSecret: { secretName: 'jaeger-oidc', key: 'cookie-secret' },
          redirectUrl: `${restrictedUi}/oauth2/callback`,
          emailDomains: ['example.com'],
        },
      });
    });
    const restricted = await startStack(yaml, {
      only: QUERY_PODS,
      secrets: productionSecrets(services, pki, 'unused'),
      extraAddresses: esAddress(services),
      preferredPorts: { 'jaeger-query/query': port },
    });
    const context = await browser.newContext();
    try {
      const { status } = await logIn(context, keycloak.users.outside, restrictedUi);
      expect(status).toBe(403);
      const api = (user: KeycloakUser) =>
        keycloak
          .token(user)
          .then((token) => fetch(`${restrictedUi}/api/services`, { headers: { authorization: `Bearer ${token}` } }))
          .then((r) => r.status);
      expect(await api(keycloak.users.outside)).toBe(403);
      expect(await api(keycloak.users.allowed)).toBe(200);
    } finally {
      await context.close();
      await restricted.stop();
    }
  });

  test('the query API: 401 without credentials, 200 with a bearer token of the issuer, 401 with a tampered token or one of another issuer', async () => {
    const { keycloak } = services;
    const get = (token?: string) =>
      fetch(`${ui}/api/services`, token ? { headers: { authorization: `Bearer ${token}` } } : {}).then((r) => r.status);
    expect(await get()).toBe(401);
    const token = await keycloak.token(keycloak.users.allowed);
    expect(await get(token)).toBe(200);
    // One character of the signature changed.
    const tampered = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    expect(await get(tampered)).toBe(401);
    expect(await get(await keycloak.token(keycloak.users.otherIssuer))).toBe(401);
  });

  test('forwarded headers from a client that is no trusted proxy are not believed: the log names the connection, not X-Forwarded-For', async () => {
    const probe = `/api/services?probe=${Date.now()}`;
    await fetch(`${ui}${probe}`, { headers: { 'x-forwarded-for': '203.0.113.9', 'x-real-ip': '203.0.113.9' } });
    const proxy = stack.running.find((r) => r.pod.name === 'jaeger-query-oauth2-proxy')!;
    const line = await eventually('the request in the proxy log', () =>
      readFileSync(proxy.logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes(probe)),
    );
    expect(line).toContain('127.0.0.1');
    expect(line).not.toContain('203.0.113.9');
  });

  test("Jaeger's own UI port listens on the pod's loopback only; the pod's and Service's query port is the proxy's", () => {
    const manifests = chartManifests(CHART);
    const query = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === 'jaeger-query')!;
    const [jaeger, proxy] = query.spec.template.spec.containers;
    expect(jaeger.ports.map((p: { containerPort: number }) => p.containerPort)).not.toContain(16686);
    expect(proxy.ports).toEqual([{ name: 'query', containerPort: 4180, protocol: 'TCP' }]);
    const config = stack.pods.find((p) => p.name === 'jaeger-query')!.config!.document as any;
    expect(config.extensions.jaeger_query.http.endpoint).toMatch(/^127\.0\.0\.1:/);
  });
});
