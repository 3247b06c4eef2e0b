// The pages a reader follows on the real node, run as written (harness/docs/walkthrough.ts), one
// after the other: each page starts the real node from its copy of the repository, and one real node
// runs per machine, so this project runs after the node project has stopped its own.
// - docs/contribute/local-cluster.md's real node: the node Ready, the operator's folder applied, a
//   Website Ready and its page served by pods that run, then nothing of the node left.
// - docs/use/production-trace-stack.md: Elasticsearch and Keycloak on the node's side of the machine,
//   the Secrets from the page's own commands, dist/tracing-production-elasticsearch/ with every pod
//   Ready, a login as alice in Chromium through the page's port forward, HotROD's trace sent through
//   the gateway and read back, the page's index names, the index cleaner run by hand; and what the
//   page says of the folder besides: tokens checked, NetworkPolicies enforced, no restart.
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { type Walkthrough, walkthrough } from '../../harness/docs/walkthrough.ts';
import { NODE, nodeCommands } from '../../harness/node/node.ts';
import {
  expectNoRestarts,
  expectPoliciesEnforced,
  expectProxyInFront,
  type ProductionPods,
  productionPods,
} from '../../harness/node/production.ts';
import { launchBrowser } from '../../harness/process/browser.ts';
import { eventually } from '../../harness/process/poll.ts';
import { es } from '../../harness/trace/elasticsearch.ts';
import { type KeycloakStarted, keycloakAt } from '../../harness/trace/keycloak.ts';
import { INDEX_PREFIX } from '../../harness/trace/production.ts';
import { HOTROD_SERVICES, type JaegerTrace, wholeDispatchTrace } from '../../harness/trace/traces.ts';

/** The host's end of the node's link, where the page's servers listen. */
const HOST = '172.31.254.1';
/** A namespace the page does not make: the NetworkPolicies are probed from a pod there. */
const CLIENT_NS = 'outside-production';

/** The node's name and whether it is Ready, from `kubectl get nodes -o json`. */
const nodesReady = (nodes: any) =>
  nodes.items.map((n: any) => `${n.metadata.name} ${n.status.conditions.find((c: any) => c.type === 'Ready')?.status}`);

/** The last line of a step's output that is a JSON object: what the servers' scripts print when up. */
const lastJson = (output: string) =>
  JSON.parse(
    output
      .trim()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .pop()!,
  );

/** After the last step: no process names the copy, the node's network namespace is gone. */
function expectNothingRunning(walk: Walkthrough): void {
  expect(walk.processesLeft()).toEqual([]);
  expect(existsSync('/run/netns/website-stack-node')).toBe(false);
}

describe("docs/contribute/local-cluster.md's real node", () => {
  const { walk, cluster } = walkthrough('docs/contribute/local-cluster.md', 'npm run cluster:down');

  test(
    'the cluster comes up with its one node, real and Ready',
    async () => {
      // A machine without the node's binaries and images builds them here (npm test has built them).
      await walk().run(/npm run cluster:up -- --real-node/, { timeoutMs: 30 * 60_000 });
      expect(walk().exported().KUBECONFIG).toBe(cluster().kubeconfig);
      expect(nodesReady(await nodeCommands(cluster()).getJson(['nodes']))).toEqual([`${NODE} True`]);
    },
    31 * 60_000,
  );

  test(
    "the Website becomes Ready, and its Service's address answers with its page from the node's pods",
    async () => {
      const { output } = await walk().run(/kind: Website/, { timeoutMs: 5 * 60_000 });
      expect(output).toMatch(/website\.web\.example\.com\/hello condition met/);
      expect(output).toMatch(/<title>Hello<\/title>/);
      const pods = await nodeCommands(cluster()).readyPods('website-system', 'app.kubernetes.io/instance=hello', 2);
      for (const pod of pods) expect(pod.spec.nodeName).toBe(NODE);
    },
    6 * 60_000,
  );

  test(
    'the last block stops the node, its pods and its network',
    async () => {
      const { output } = await walk().run(/npm run cluster:down/, { timeoutMs: 3 * 60_000 });
      expect(output).toMatch(/cluster 'website-stack' is down/);
      expectNothingRunning(walk());
      expect(walk().remaining()).toEqual([]);
    },
    4 * 60_000,
  );
});

describe('docs/use/production-trace-stack.md', () => {
  const { walk, cluster } = walkthrough(
    'docs/use/production-trace-stack.md',
    'npm run keycloak:down; npm run elasticsearch:down; npm run cluster:down',
  );
  const node = () => nodeCommands(cluster());
  const local = (file: string) => join(walk().dir, '.local', file);
  /** Elasticsearch as the page started it, for requests as its users. */
  const elasticsearch = () => {
    const passwords = Object.fromEntries(
      readFileSync(local('elasticsearch/passwords'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
    );
    return {
      elasticsearch: {
        url: `https://${HOST}:9200`,
        caFile: local('elasticsearch/config/certs/ca.crt'),
        users: { elastic: passwords.elastic, jaeger: passwords.jaeger },
      },
    };
  };
  let keycloak: Awaited<ReturnType<typeof keycloakAt>>;
  let browser: Browser | undefined;
  let trace: JaegerTrace;
  let pods: ProductionPods;
  const ui = 'http://127.0.0.1:4180';

  afterAll(async () => {
    await browser?.close();
  });

  test(
    'the cluster comes up with its real node',
    async () => {
      await walk().run(/npm run cluster:up -- --real-node/, { timeoutMs: 30 * 60_000 });
      const env = walk().exported();
      expect(env.KUBECONFIG).toBe(cluster().kubeconfig);
      expect(env.PATH.split(':')[0]).toBe(join(walk().dir, '.cluster/bin'));
      expect(nodesReady(await node().getJson(['nodes']))).toEqual([`${NODE} True`]);
    },
    31 * 60_000,
  );

  test(
    "Elasticsearch and Keycloak serve HTTPS at the node's side of this machine, Keycloak's issuer on port 443",
    async () => {
      const { output } = await walk().run(/npm run elasticsearch:up -- 9200 172\.31\.254\.1/, {
        timeoutMs: 15 * 60_000,
      });
      expect(output).toContain(`"url":"https://${HOST}:9200"`);
      const started = lastJson(output) as KeycloakStarted;
      expect(started.issuerUrl).toBe(`https://${HOST}/realms/website-stack`);
      keycloak = await keycloakAt(started);
      // A wrong password is refused; the jaeger user's, from the page's file, is taken.
      const wrong = { elasticsearch: { ...elasticsearch().elasticsearch, users: { elastic: 'wrong', jaeger: '' } } };
      expect((await es(wrong, 'GET', '/')).status).toBe(401);
      expect((await es(elasticsearch(), 'GET', '/_security/_authenticate', { user: 'jaeger' })).status).toBe(200);
    },
    16 * 60_000,
  );

  test('the storage Service and its EndpointSlice name the host', async () => {
    await walk().run(/kind: EndpointSlice/);
    const slice = await node().getJson(['endpointslice', 'elasticsearch-es-http-external', '-n', 'tracing']);
    expect(slice.endpoints.map((e: any) => e.addresses)).toEqual([[HOST]]);
    // The pod the NetworkPolicies are probed from, at the end: started now, so that kube-router
    // knows it long before.
    await node().startClient(CLIENT_NS);
  });

  test("the page's CA signs a server certificate for each Service name and two client certificates", async () => {
    await walk().run(/sign otel-collector/);
    const pki = (file: string) => readFileSync(local(`tracing-pki/${file}`), 'utf8');
    const ca = new X509Certificate(pki('ca.crt'));
    const certs = Object.fromEntries(
      ['otel-collector', 'jaeger-collector', 'gateway', 'hotrod'].map((name) => [
        name,
        new X509Certificate(pki(`${name}.crt`)),
      ]),
    );
    for (const cert of Object.values(certs)) expect(cert.verify(ca.publicKey)).toBe(true);
    expect(certs['otel-collector'].subjectAltName).toBe('DNS:otel-collector.tracing.svc');
    expect(certs['jaeger-collector'].subjectAltName).toBe('DNS:jaeger-collector.tracing.svc');
    expect(certs.gateway.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(certs.hotrod.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
  });

  test("the Secrets hold the servers' values exactly (no trailing newline) and the page's redirect URL", async () => {
    await walk().run(/create secret generic jaeger-oidc/);
    const data = async (name: string) =>
      Object.fromEntries(
        Object.entries((await node().getJson(['secret', name, '-n', 'tracing'])).data as Record<string, string>).map(
          ([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')],
        ),
      );
    expect((await data('jaeger-elasticsearch')).password).toBe(elasticsearch().elasticsearch.users.jaeger);
    const oidc = await data('jaeger-oidc');
    expect(oidc['client-secret']).toBe(keycloak.clientSecret);
    // 32 bytes in URL-safe base64, the alphabet oauth2-proxy decodes.
    expect(oidc['cookie-secret']).toMatch(/^[A-Za-z0-9_-]{43}=$/);
    expect(oidc['redirect-url']).toBe(`${ui}/oauth2/callback`);
    for (const name of ['otel-collector-tls', 'jaeger-collector-tls', 'otel-collector-client-tls'])
      expect(Object.keys(await data(name)).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
  });

  test(
    'the folder: collectors, query pods and the gateway Ready on the node, oauth2-proxy in front of query',
    async () => {
      const { output } = await walk().run(/kubectl apply -f dist\/tracing-production-elasticsearch\//, {
        timeoutMs: 6 * 60_000,
      });
      expect(output).toMatch(/deployment\.apps\/jaeger-query condition met/);
      pods = await productionPods(node());
      expectProxyInFront(pods.query);
    },
    7 * 60_000,
  );

  test("the second shell's port forward serves oauth2-proxy on 127.0.0.1:4180, asking for a login", async () => {
    await walk().run(/port-forward service\/jaeger-query 4180:4180/);
    const status = await eventually(
      `oauth2-proxy at ${ui}`,
      async () => (await fetch(`${ui}/api/services`, { signal: AbortSignal.timeout(5000) })).status,
      { timeoutMs: 60_000, progress: () => walk().backgroundOutput(/port-forward/) },
    );
    expect(status).toBe(401);
  }, 90_000);

  test(
    "alice logs in with the page's password in Chromium and lands on Jaeger; the cookie is SameSite=Lax and opens the query API",
    async () => {
      const { output } = await walk().run(/jq -r \.users\.allowed\.password/);
      const password = output.trim();
      expect(password).toBe(keycloak.users.allowed.password);
      // Keycloak's certificate is trusted as the page asks the reader's browser to: by its key, not
      // by ignoring every certificate error.
      const certificate = new X509Certificate(readFileSync(local('keycloak/pki/tls.crt')));
      const spki = createHash('sha256')
        .update(certificate.publicKey.export({ type: 'spki', format: 'der' }))
        .digest('base64');
      browser = await launchBrowser([`--ignore-certificate-errors-spki-list=${spki}`]);
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(ui);
      await page.waitForURL(/\/realms\/website-stack\/protocol\/openid-connect\/auth/);
      expect(new URL(page.url()).origin).toBe(`https://${HOST}`);
      await page.fill('#username', 'alice@example.com');
      await page.fill('#password', password);
      // Back where the reader started: the page Jaeger query serves there (its index.html, whose base
      // Jaeger fills in), and the session opens the query API.
      const landed = page.waitForResponse((r) => r.url() === `${ui}/`);
      await page.click('#kc-login');
      expect((await landed).status()).toBe(200);
      expect(await page.locator('base[data-inject-target="BASE_URL"]').getAttribute('href')).toBe('/');
      const session = (await context.cookies(ui)).find((c) => c.name === '_oauth2_proxy');
      expect(session).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Lax' });
      const api = await context.request.get(`${ui}/api/services`);
      expect(api.status()).toBe(200);
      expect(await api.json()).toHaveProperty('data');
      await context.close();
    },
    2 * 60_000,
  );

  test(
    "HotROD, from the page's shop.ts, rolls out in its namespace and answers the page's /dispatch",
    async () => {
      const { output } = await walk().run(/npx node shop\.ts/, { timeoutMs: 5 * 60_000 });
      expect(output).toMatch(/deployment "hotrod" successfully rolled out/);
      // /dispatch answers with the driver it found.
      expect(output).toMatch(/"Driver":"\w+"/);
    },
    6 * 60_000,
  );

  test(
    "the page's query API read prints the trace with every HotROD service; tokens are checked",
    async () => {
      const all = (out: string) => HOTROD_SERVICES.every((service) => out.includes(service));
      const { output } = await walk().runUntil(/api\/traces\?service=frontend/, all, 120_000);
      expect(output).toMatch(/^[0-9a-f]{32}: \d+ spans from /m);
      const token = await keycloak.token(keycloak.users.allowed);
      trace = await eventually('the whole /dispatch trace', () =>
        wholeDispatchTrace(ui, { authorization: `Bearer ${token}` }),
      );
      const status = async (headers: Record<string, string>) =>
        (await fetch(`${ui}/api/services`, { headers, redirect: 'manual' })).status;
      const [header, payload, signature] = token.split('.');
      expect(await status({})).toBe(401);
      expect(await status({ authorization: `Bearer ${header}.${payload}.${signature.slice(0, -4)}AAAA` })).toBe(401);
      expect(await status({ authorization: `Bearer ${token}` })).toBe(200);
    },
    4 * 60_000,
  );

  test("the page's index names are Elasticsearch's, and the trace's spans are in them", async () => {
    const { output } = await walk().run(/_cat\/indices/);
    // Daily indices, by the day (UTC) the spans started.
    const day = new Date(trace.spans[0].startTime / 1000).toISOString().slice(0, 10);
    expect(output).toMatch(new RegExp(`^${INDEX_PREFIX}-span-${day}\\s`, 'm'));
    expect(output).toMatch(new RegExp(`^${INDEX_PREFIX}-service-${day}\\s`, 'm'));
    // Delivery is at least once: the distinct span ids are compared, not the number of documents.
    const stored = await es(elasticsearch(), 'POST', `/${INDEX_PREFIX}-span-*/_search`, {
      body: {
        size: 0,
        query: { term: { traceID: trace.traceID } },
        aggs: { spans: { terms: { field: 'spanID', size: 10_000 } } },
      },
    });
    const ids: string[] = stored.body.aggregations.spans.buckets.map((b: { key: string }) => b.key);
    expect(ids.sort()).toEqual(trace.spans.map((s) => s.spanID).sort());
  });

  test(
    'the index cleaner, run by hand, deletes every index (created 10 days ago by its clock) and the trace with them',
    async () => {
      const indices = (await es(elasticsearch(), 'GET', `/${INDEX_PREFIX}-*?flat_settings=true`)).body;
      const before = Object.keys(indices);
      expect(before.length).toBeGreaterThan(0);
      for (const name of before)
        expect(Date.now() - Number(indices[name].settings['index.creation_date'])).toBeGreaterThan(9 * 86_400_000);
      const { output } = await walk().run(/create job --from=cronjob\/jaeger-es-index-cleaner/, {
        timeoutMs: 4 * 60_000,
      });
      expect(output).toContain('Deleting indices');
      for (const name of before) expect(output).toContain(name);
      expect(Object.keys((await es(elasticsearch(), 'GET', `/${INDEX_PREFIX}-*`)).body)).toEqual([]);
      const token = await keycloak.token(keycloak.users.allowed);
      const response = await fetch(`${ui}/api/traces/${trace.traceID}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(404);
    },
    5 * 60_000,
  );

  test(
    "the folder's NetworkPolicies hold: the gateway's OTLP and oauth2-proxy answer another namespace, the rest refuses it",
    async () => {
      await expectPoliciesEnforced(node(), CLIENT_NS, pods);
    },
    3 * 60_000,
  );

  test('nothing restarted in the namespaces the page made', () => expectNoRestarts(node(), ['tracing', 'shop']));

  test(
    'Ctrl-C in the second shell and the last block leave nothing running',
    async () => {
      await walk().stopBackground();
      const { output } = await walk().run(
        /npm run keycloak:down && npm run elasticsearch:down && npm run cluster:down/,
        {
          timeoutMs: 3 * 60_000,
        },
      );
      expect(output).toMatch(/cluster 'website-stack' is down/);
      expectNothingRunning(walk());
      expect(walk().remaining()).toEqual([]);
    },
    4 * 60_000,
  );
});
