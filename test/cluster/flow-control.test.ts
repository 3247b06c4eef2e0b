// OperatorFlowControl on the real API server: it accepts the FlowSchema and PriorityLevelConfiguration
// as synthesized, and its API Priority and Fairness filter classifies the operator's ServiceAccount's
// requests by them. The filter names the FlowSchema and priority level it chose in every response's
// X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID headers.
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createNamespace, deleteNamespace, getJson, kubectl, loadClusterInfo, ok } from '../../harness/cluster/kube.ts';
import { type Manifest, only, synth } from '../../harness/manifests.ts';
import { eventually } from '../../harness/process/poll.ts';
import { WebsiteOperator } from '../../lib/operator/website-operator.ts';

const FLOW_SCHEMA_UID = 'x-kubernetes-pf-flowschema-uid';
const PRIORITY_LEVEL_UID = 'x-kubernetes-pf-prioritylevel-uid';

/** How a request authenticates: a bearer token, or the administrator's client certificate. */
type Credentials = { token: string } | { cert: string; key: string };

interface Answer {
  status: number;
  flowSchemaUid: string;
  priorityLevelUid: string;
}

let ns: string;
let manifests: Manifest[];
let flowSchemaName: string;
let server: { url: URL; ca: string };
let admin: Credentials;

/** GET `path` from the test cluster's API server with `credentials`: the status and the APF headers. */
async function get(path: string, credentials: Credentials): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = 'token' in credentials ? { authorization: `Bearer ${credentials.token}` } : {};
    const tls = 'cert' in credentials ? { cert: credentials.cert, key: credentials.key } : {};
    const req = request(new URL(path, server.url), { method: 'GET', ca: server.ca, headers, ...tls }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode!,
          flowSchemaUid: String(res.headers[FLOW_SCHEMA_UID]),
          priorityLevelUid: String(res.headers[PRIORITY_LEVEL_UID]),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const uidOf = async (kind: string, name: string): Promise<string> => (await getJson([kind, name])).metadata.uid;
const tokenOf = async (serviceAccount: string) => ({
  token: (await ok(['create', 'token', serviceAccount, '-n', ns, '--duration=10m'])).trim(),
});

beforeAll(async () => {
  ns = await createNamespace('flow-control');
  manifests = synth(
    (chart) => new WebsiteOperator(chart, 'operator', { namespace: ns, createNamespace: false, flowControl: true }),
  );
  flowSchemaName = only(manifests, 'FlowSchema').metadata.name;
  // The operator's ServiceAccount and Role (so its requests are also allowed), and the flow control objects.
  const applied = manifests.filter((m) =>
    ['ServiceAccount', 'Role', 'RoleBinding', 'PriorityLevelConfiguration', 'FlowSchema'].includes(m.kind),
  );
  await ok(['apply', '--server-side', '-f', '-'], { input: applied.map((m) => JSON.stringify(m)).join('\n') });

  const cluster = await loadClusterInfo();
  server = { url: new URL(cluster.server), ca: await readFile(cluster.ca, 'utf8') };
  const user = JSON.parse(await ok(['config', 'view', '--raw', '--minify', '-o', 'json'])).users[0].user;
  const pem = async (field: string) =>
    user[`${field}-data`] ? Buffer.from(user[`${field}-data`], 'base64').toString() : readFile(user[field], 'utf8');
  admin = { cert: await pem('client-certificate'), key: await pem('client-key') };

  // The API server's flow-control controller marks the FlowSchema not Dangling right after it has
  // installed it (and found its priority level) for classifying requests.
  await eventually('the API server to take up the FlowSchema', async () => {
    const conditions: Manifest[] = (await getJson(['flowschema', flowSchemaName])).status?.conditions ?? [];
    return conditions.some((c) => c.type === 'Dangling' && c.status === 'False') || undefined;
  });
});

afterAll(async () => {
  if (flowSchemaName)
    await kubectl(['delete', 'flowschema,prioritylevelconfiguration', flowSchemaName, '--ignore-not-found']);
  if (ns) await deleteNamespace(ns);
});

describe("OperatorFlowControl on the API server's API Priority and Fairness", () => {
  test('the API server stores both objects as synthesized', async () => {
    for (const kind of ['PriorityLevelConfiguration', 'FlowSchema']) {
      const synthesized = only(manifests, kind);
      const stored = await getJson([kind.toLowerCase(), synthesized.metadata.name]);
      expect(stored.apiVersion).toBe('flowcontrol.apiserver.k8s.io/v1');
      expect(stored.metadata.namespace).toBeUndefined();
      expect(stored.metadata.labels).toEqual(synthesized.metadata.labels);
      // Nothing defaulted or dropped: the spec reads back field for field.
      expect(stored.spec).toEqual(synthesized.spec);
    }
  });

  test('the priority level gets the seats its JSDoc promises: 24 of 600, 12 of them never lent', async () => {
    // kube-apiserver's default concurrency limit, which the local cluster keeps: --max-requests-inflight
    // 400 + --max-mutating-requests-inflight 200, divided among the Limited levels by their shares.
    const levels: Manifest[] = (await getJson(['prioritylevelconfigurations'])).items;
    const shares = levels.reduce((sum, level) => sum + (level.spec.limited?.nominalConcurrencyShares ?? 0), 0);
    expect(Math.ceil((600 * 10) / shares)).toBe(24);
    const metrics = await ok(['get', '--raw', '/metrics']);
    const seats = (metric: string) =>
      Number(
        new RegExp(`^apiserver_flowcontrol_${metric}\\{priority_level="${flowSchemaName}"\\} (\\d+)$`, 'm').exec(
          metrics,
        )?.[1],
      );
    expect({ nominal: seats('nominal_limit_seats'), guaranteed: seats('lower_limit_seats') }).toEqual({
      nominal: 24,
      guaranteed: 12,
    });
  });

  test("requests made as the operator's ServiceAccount are classified by its FlowSchema, into its priority level", async () => {
    const operator = await tokenOf('website-operator');
    const expected = {
      flowSchemaUid: await uidOf('flowschema', flowSchemaName),
      priorityLevelUid: await uidOf('prioritylevelconfiguration', flowSchemaName),
    };
    // Resource requests the operator makes (its Websites, its children, its Lease) and a non-resource one.
    for (const path of [
      `/apis/web.example.com/v1/namespaces/${ns}/websites`,
      `/apis/apps/v1/namespaces/${ns}/deployments?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dwebsite-operator`,
      `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/website-operator`,
      '/version',
    ]) {
      const answer = await get(path, operator);
      expect([path, answer]).toEqual([path, { status: expect.any(Number), ...expected }]);
      expect([path, answer.status]).toEqual([path, path.includes('/leases/') ? 404 : 200]);
    }
  });

  test('another ServiceAccount of the same namespace stays in the built-in service-accounts schema (workload-low)', async () => {
    const other = 'not-the-operator';
    await ok(['create', 'serviceaccount', other, '-n', ns]);
    const answer = await get(`/api/v1/namespaces/${ns}/configmaps`, await tokenOf(other));
    expect(answer).toEqual({
      status: 403,
      flowSchemaUid: await uidOf('flowschema', 'service-accounts'),
      priorityLevelUid: await uidOf('prioritylevelconfiguration', 'workload-low'),
    });
  });

  test("an administrator's request is not classified by it", async () => {
    const answer = await get(`/apis/web.example.com/v1/namespaces/${ns}/websites`, admin);
    expect(answer.status).toBe(200);
    expect(answer.flowSchemaUid).not.toBe(await uidOf('flowschema', flowSchemaName));
    expect(answer.priorityLevelUid).not.toBe(await uidOf('prioritylevelconfiguration', flowSchemaName));
    // The local cluster's administrator is in system:masters, which the mandatory exempt schema matches first.
    expect(answer).toEqual({
      status: 200,
      flowSchemaUid: await uidOf('flowschema', 'exempt'),
      priorityLevelUid: await uidOf('prioritylevelconfiguration', 'exempt'),
    });
  });
});
