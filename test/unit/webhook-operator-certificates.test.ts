import { X509Certificate } from 'node:crypto';
import { captureLogs } from '../../harness/operator/logs.ts';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import {
  CRDS,
  type KubeObject,
  type ObjectRef,
  type ResourceType,
  SECRETS,
} from '../../operator/src/controller/kube-api.ts';
import {
  createCertificateAuthority,
  issueServingCertificate,
  splitPemCertificates,
} from '../../operator/src/webhook/certificates.ts';
import {
  type CertificatesClient,
  OperatorManagedCertificates,
  type OperatorManagedCertificatesOptions,
} from '../../operator/src/webhook/operator-managed-certificates.ts';

const NS = 'website-system';
const CRD = 'websites.web.example.com';
const DAY_MS = 24 * 3600_000;
const clone = <T>(value: T): T => structuredClone(value);

/**
 * An in-memory API server for Secrets and CRDs with the semantics this code relies on:
 * AlreadyExists on create, Conflict on a stale resourceVersion, JSON merge patch. Every write is
 * recorded; `beforeWrite` lets a test slip in a concurrent change.
 */
class FakeApi implements CertificatesClient {
  readonly objects = new Map<string, KubeObject>();
  readonly writes: string[] = [];
  beforeWrite?: (verb: string) => Promise<void> | void;
  failures: ApiError[] = [];
  private version = 1;

  private key(type: ResourceType, ref: ObjectRef) {
    return `${type.resource}/${ref.namespace ?? ''}/${ref.name}`;
  }
  put(type: ResourceType, object: KubeObject) {
    const stored = { ...clone(object), metadata: { ...object.metadata, resourceVersion: String(this.version++) } };
    this.objects.set(this.key(type, object.metadata ?? {}), stored);
    return clone(stored);
  }
  read<T>(type: ResourceType, name: string, namespace?: string): T {
    return clone(this.objects.get(this.key(type, { name, namespace }))) as T;
  }
  private fail() {
    const failure = this.failures.shift();
    if (failure) throw failure;
  }

  async get<T extends KubeObject>(type: ResourceType, ref: ObjectRef): Promise<T | undefined> {
    await Promise.resolve();
    this.fail();
    return clone(this.objects.get(this.key(type, ref))) as T | undefined;
  }
  async create<T extends KubeObject>(type: ResourceType, object: T): Promise<T> {
    await this.beforeWrite?.('create');
    this.fail();
    if (this.objects.has(this.key(type, object.metadata ?? {})))
      throw new ApiError(409, 'AlreadyExists', `${type.resource} "${object.metadata?.name}" already exists`);
    this.writes.push(`create ${type.resource}`);
    return this.put(type, object) as T;
  }
  async update<T extends KubeObject>(type: ResourceType, object: T): Promise<T> {
    await this.beforeWrite?.('update');
    this.fail();
    const current = this.objects.get(this.key(type, object.metadata ?? {}));
    if (current?.metadata?.resourceVersion !== object.metadata?.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    this.writes.push(`update ${type.resource}`);
    return this.put(type, object) as T;
  }
  async patch<T extends KubeObject>(type: ResourceType, ref: ObjectRef, patchType: string, body: unknown): Promise<T> {
    await this.beforeWrite?.('patch');
    this.fail();
    expect(patchType).toBe('merge');
    const current = this.objects.get(this.key(type, ref));
    if (!current) throw new ApiError(404, 'NotFound', 'not found');
    this.writes.push(`patch ${type.resource}`);
    return this.put(type, mergePatch(current, body) as KubeObject) as T;
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const result: Record<string, unknown> =
    typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

const crd = (
  clientConfig: Record<string, unknown> = {
    service: { name: 'website-operator-webhook', namespace: NS, path: '/convert', port: 443 },
  },
) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: CRD },
  spec: {
    group: 'web.example.com',
    conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig } },
  },
});

const text = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString('utf8');
type Secret = KubeObject & { type: string; data: Record<string, string> };
type Crd = ReturnType<typeof crd>;

/** An API server holding the CRD, converting through the webhook Service. */
function apiWithCrd(): FakeApi {
  const api = new FakeApi();
  api.put(CRDS, crd());
  return api;
}

function certificates(api: FakeApi, options: Partial<OperatorManagedCertificatesOptions> = {}) {
  return new OperatorManagedCertificates({ client: api, namespace: NS, crdName: CRD, ...options });
}

describe('OperatorManagedCertificates', () => {
  test('creates the Secret, makes the CRD trust the CA, then serves the certificate', async () => {
    const api = apiWithCrd();
    const certs = certificates(api);
    const changes: string[] = [];
    certs.onChange(() => changes.push(certs.current()!.cert));
    expect(certs.current()).toBeUndefined();

    await certs.sync();

    expect(api.writes).toEqual(['create secrets', 'patch customresourcedefinitions']);
    const secret = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    expect(secret.metadata?.labels).toMatchObject({
      'app.kubernetes.io/name': 'website-operator',
      'app.kubernetes.io/component': 'webhook',
    });
    const cert = new X509Certificate(text(secret.data['tls.crt']));
    const ca = new X509Certificate(text(secret.data['ca.crt']));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subject).toBe('CN=website-operator-webhook.website-system.svc');
    expect(cert.subjectAltName).toContain('DNS:website-operator-webhook.website-system.svc');
    // About a year for the certificate, about ten for the CA, both backdated an hour.
    expect(cert.validToDate.getTime() - Date.now()).toBeGreaterThan(364 * DAY_MS);
    expect(cert.validToDate.getTime() - Date.now()).toBeLessThan(366 * DAY_MS);
    expect(ca.validToDate.getTime() - Date.now()).toBeGreaterThan(3649 * DAY_MS);
    expect(Date.now() - cert.validFromDate.getTime()).toBeGreaterThanOrEqual(3599_000);

    const clientConfig = api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig as Record<string, unknown>;
    expect(clientConfig.service).toEqual({
      name: 'website-operator-webhook',
      namespace: NS,
      path: '/convert',
      port: 443,
    });
    expect(text(clientConfig.caBundle as string)).toBe(text(secret.data['ca.crt']));
    expect(certs.current()).toEqual({ cert: text(secret.data['tls.crt']), key: text(secret.data['tls.key']) });
    expect(changes).toEqual([certs.current()!.cert]);
  });

  test('reuses a valid Secret and CRD: no write, the same certificate, on a second start and on every later check', async () => {
    const api = apiWithCrd();
    const first = certificates(api);
    await first.sync();
    api.writes.length = 0;

    const second = certificates(api);
    let changes = 0;
    second.onChange(() => changes++);
    await second.sync();
    await second.sync();
    expect(api.writes).toEqual([]);
    expect(second.current()).toEqual(first.current());
    expect(changes).toBe(1);
  });

  test("two replicas starting at once create one Secret: the loser of the race adopts the winner's certificate", async () => {
    const api = apiWithCrd();
    // Which replica wins depends on whose key pair is generated first, so all three log to one place.
    const { logs, logger } = captureLogs();
    const [a, b, c] = [certificates(api, { logger }), certificates(api, { logger }), certificates(api, { logger })];
    await Promise.all([a.sync(), b.sync(), c.sync()]);
    expect(api.writes.filter((w) => w === 'create secrets')).toHaveLength(1);
    expect(a.current()).toEqual(b.current());
    expect(c.current()).toEqual(a.current());
    expect(logs.join('').match(/another replica wrote the webhook Secret first/g)).toHaveLength(2);
  });

  test('a renewal that loses to a concurrent write re-reads and keeps the winner', async () => {
    const api = apiWithCrd();
    const certs = certificates(api);
    await certs.sync();
    // Another replica replaces the serving certificate (say, after a hand edit broke it) just as this one renews.
    const secret = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    api.put(SECRETS, { ...secret, data: { ...secret.data, 'tls.crt': Buffer.from('broken').toString('base64') } });
    const ca = { cert: text(secret.data['ca.crt']), key: text(secret.data['ca.key']) };
    const winner = await issueServingCertificate(ca, {
      commonName: 'x',
      dnsNames: [
        'website-operator-webhook.website-system.svc',
        'website-operator-webhook',
        'website-operator-webhook.website-system',
        'website-operator-webhook.website-system.svc.cluster.local',
      ],
      validityMs: 365 * DAY_MS,
    });
    api.beforeWrite = (verb) => {
      if (verb !== 'update') return;
      api.beforeWrite = undefined;
      const current = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
      api.put(SECRETS, {
        ...current,
        data: {
          ...current.data,
          'tls.crt': Buffer.from(winner.cert).toString('base64'),
          'tls.key': Buffer.from(winner.key).toString('base64'),
        },
      });
    };
    api.writes.length = 0;
    await certs.sync();
    expect(api.writes).toEqual([]);
    expect(certs.current()).toEqual(winner);
  });

  test('gives up after repeated conflicts with an error the run loop retries', async () => {
    const api = apiWithCrd();
    const conflict = () => new ApiError(409, 'Conflict', 'the object has been modified');
    api.beforeWrite = () => {
      api.failures.push(conflict());
    };
    await expect(certificates(api).sync()).rejects.toThrow('the object has been modified');
    expect(api.writes).toEqual([]);
  });

  test('repairs a Secret without its CA key by rotating the CA, trusting old and new CA until the old one expires', async () => {
    const api = apiWithCrd();
    const certs = certificates(api);
    await certs.sync();
    const before = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    const { 'ca.key': _, ...withoutCaKey } = before.data;
    api.put(SECRETS, { ...before, data: withoutCaKey });
    api.writes.length = 0;

    await certs.sync();

    expect(api.writes).toEqual(['update secrets', 'patch customresourcedefinitions']);
    const after = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    const bundle = splitPemCertificates(text(after.data['ca.crt']));
    expect(bundle).toHaveLength(2);
    expect(bundle[1]).toBe(text(before.data['ca.crt']));
    const newCa = new X509Certificate(bundle[0]);
    expect(new X509Certificate(text(after.data['tls.crt'])).verify(newCa.publicKey)).toBe(true);
    expect(text(api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig.caBundle as string)).toBe(
      bundle.join(''),
    );
  });

  test('a replica with an older bundle never removes a CA the CRD already trusts', async () => {
    const api = new FakeApi();
    const old = await createCertificateAuthority({ commonName: 'old', validityMs: 3650 * DAY_MS });
    const newer = await createCertificateAuthority({ commonName: 'new', validityMs: 3650 * DAY_MS });
    const names = [
      'website-operator-webhook',
      'website-operator-webhook.website-system',
      'website-operator-webhook.website-system.svc',
      'website-operator-webhook.website-system.svc.cluster.local',
    ];
    const serving = await issueServingCertificate(old, { commonName: 'x', dnsNames: names, validityMs: 365 * DAY_MS });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    api.put(
      CRDS,
      crd({ service: { name: 'website-operator-webhook', namespace: NS }, caBundle: b64(newer.cert + old.cert) }),
    );
    api.put(SECRETS, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'website-operator-webhook-tls', namespace: NS },
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': b64(serving.cert),
        'tls.key': b64(serving.key),
        'ca.crt': b64(old.cert),
        'ca.key': b64(old.key),
      },
    } as KubeObject);
    await certificates(api).sync();
    expect(api.writes).toEqual([]);
  });

  test('replaces a caBundle that trusts something else, or holds an expired certificate', async () => {
    const api = new FakeApi();
    const stranger = await createCertificateAuthority({ commonName: 'stranger', validityMs: 3650 * DAY_MS });
    api.put(
      CRDS,
      crd({
        service: { name: 'website-operator-webhook', namespace: NS },
        caBundle: Buffer.from(stranger.cert).toString('base64'),
      }),
    );
    const certs = certificates(api);
    await certs.sync();
    const secret = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    expect(api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig.caBundle).toBe(secret.data['ca.crt']);

    const expired = await createCertificateAuthority({
      commonName: 'expired',
      validityMs: 1000,
      now: Date.now() - 10_000,
    });
    const bundle = Buffer.from(text(secret.data['ca.crt']) + expired.cert).toString('base64');
    api.put(CRDS, crd({ service: { name: 'website-operator-webhook', namespace: NS }, caBundle: bundle }));
    api.writes.length = 0;
    await certs.sync();
    expect(api.writes).toEqual(['patch customresourcedefinitions']);
    expect(api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig.caBundle).toBe(secret.data['ca.crt']);
  });

  test('writes only the caBundle: the Service the CRD calls stays as applied, and the certificate names only the Service', async () => {
    const api = apiWithCrd();
    const certs = certificates(api);
    await certs.sync();
    const clientConfig = api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig as Record<string, unknown>;
    expect(Object.keys(clientConfig).sort()).toEqual(['caBundle', 'service']);
    expect(clientConfig.service).toEqual(crd().spec.conversion.webhook.clientConfig.service);
    const served = new X509Certificate(certs.current()!.cert);
    expect(served.subjectAltName).toBe(
      'DNS:website-operator-webhook, DNS:website-operator-webhook.website-system, DNS:website-operator-webhook.website-system.svc, DNS:website-operator-webhook.website-system.svc.cluster.local',
    );
  });

  test('a CRD left pointing at a URL gets its caBundle and a warning that names kubectl replace, and keeps its URL', async () => {
    const api = new FakeApi();
    api.put(CRDS, crd({ url: 'https://127.0.0.1:9443/convert' }));
    const { logs, logger } = captureLogs();
    const certs = certificates(api, { logger });
    await certs.sync();
    const clientConfig = api.read<Crd>(CRDS, CRD).spec.conversion.webhook.clientConfig as Record<string, unknown>;
    expect(clientConfig.url).toBe('https://127.0.0.1:9443/convert');
    expect(clientConfig.service).toBeUndefined();
    expect(clientConfig.caBundle).toBe(api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS).data['ca.crt']);
    const warning = logs.map((line) => JSON.parse(line)).find((line) => line.level === 'warn');
    expect(warning.msg).toMatch(
      /points at a URL, not the webhook Service: put the manifest back with kubectl replace -f/,
    );
  });

  test('serves the certificate when the CRD is missing or does not convert through a webhook, without writing it', async () => {
    const api = new FakeApi();
    const certs = certificates(api);
    await certs.sync();
    expect(api.writes).toEqual(['create secrets']);
    expect(certs.current()).toBeDefined();
    api.put(CRDS, { ...crd(), spec: { group: 'web.example.com', conversion: { strategy: 'None' } } } as KubeObject);
    api.writes.length = 0;
    await certs.sync();
    expect(api.writes).toEqual([]);
  });

  test('does not serve a certificate until the CRD trusts its CA: a failed patch leaves nothing served', async () => {
    const api = apiWithCrd();
    const certs = certificates(api);
    api.beforeWrite = (verb) => {
      if (verb === 'patch')
        api.failures.push(
          new ApiError(403, 'Forbidden', 'customresourcedefinitions "websites.web.example.com" is forbidden'),
        );
    };
    await expect(certs.sync()).rejects.toThrow(/forbidden/);
    expect(certs.current()).toBeUndefined();
  });

  test('run() retries failures with backoff until it can serve, and stops on abort', async () => {
    const api = apiWithCrd();
    api.failures.push(
      new ApiError(
        0,
        'ConnectionError',
        'GET /api/v1/namespaces/website-system/secrets/website-operator-webhook-tls: connect ECONNREFUSED',
      ),
    );
    const { logs, logger } = captureLogs();
    const certs = certificates(api, { logger });
    const controller = new AbortController();
    const served = new Promise<void>((resolve) => certs.onChange(resolve));
    const running = certs.run(controller.signal);
    await served;
    controller.abort();
    await running;
    const failure = JSON.parse(logs[0]);
    expect(failure).toMatchObject({
      level: 'error',
      msg: 'could not sync the conversion webhook certificate',
      retryInMs: 1000,
    });
    expect(failure.error).toMatch(/ECONNREFUSED/);
  });

  test('never logs key material', async () => {
    const api = apiWithCrd();
    const { logs, logger } = captureLogs('debug');
    const certs = certificates(api, { logger });
    await certs.sync();
    const secret = api.read<Secret>(SECRETS, 'website-operator-webhook-tls', NS);
    const all = logs.join('');
    expect(all).toMatch(/created a new webhook CA and serving certificate/);
    expect(all).not.toMatch(/PRIVATE KEY/);
    for (const key of ['tls.key', 'ca.key']) {
      const pem = text(secret.data[key]);
      expect(all).not.toContain(secret.data[key]);
      expect(all).not.toContain(pem.split('\n')[1]);
    }
  });

  test.each<[Partial<OperatorManagedCertificatesOptions>, RegExp]>([
    [{ renewBeforeFraction: 1 }, /renewBeforeFraction must be between 0 and 1/],
    [{ servingValidityMs: 0 }, /servingValidityMs must be positive/],
    [{ servingValidityMs: 60_000 }, /servingValidityMs \(60000 ms\) is too short for backdateMs \(3600000 ms\)/],
    [{ servingValidityMs: 20 * 365 * DAY_MS }, /must be shorter than caValidityMs/],
  ])('refuses options %j', (options, message) => {
    expect(() => certificates(new FakeApi(), options)).toThrow(message);
  });
});
