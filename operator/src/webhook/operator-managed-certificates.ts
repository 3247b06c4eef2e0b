import { isConflict } from '../controller/api-error.ts';
import { backoffDelay, sleep } from '../controller/backoff.ts';
import { CRDS, type KubeApi, type KubeObject, SECRETS } from '../controller/kube-api.ts';
import {
  OPERATOR_NAME,
  operatorLabels,
  WEBHOOK_SECRET_NAME,
  WEBHOOK_SERVICE_NAME,
  webhookDnsNames,
} from '../library.ts';
import type { Logger } from '../observability/logger.ts';
import {
  createCertificateAuthority,
  issueServingCertificate,
  parseCertificate,
  planRenewal,
  type RenewalPlan,
  renewalTime,
  type ServingNames,
  type StoredTls,
  splitPemCertificates,
  type TlsCertificate,
  type TlsSource,
} from './certificates.ts';

const DAY_MS = 24 * 60 * 60_000;

/** The API calls this needs; a KubeApi has them (a narrower type keeps test doubles honest). */
export type CertificatesClient = Pick<KubeApi, 'get' | 'create' | 'update' | 'patch'>;

export interface OperatorManagedCertificatesOptions {
  /** API client, authenticated as the operator's ServiceAccount. */
  readonly client: CertificatesClient;
  /** Namespace of the operator, its webhook Service and the Secret. */
  readonly namespace: string;
  /**
   * Secret that holds the CA and the serving certificate (type kubernetes.io/tls).
   * @default 'website-operator-webhook-tls'
   */
  readonly secretName?: string;
  /**
   * Service in front of the webhook; the serving certificate covers its DNS names.
   * @default 'website-operator-webhook'
   */
  readonly serviceName?: string;
  /** CustomResourceDefinition whose conversion webhook must trust the CA, e.g. `websites.web.example.com`. */
  readonly crdName: string;
  /**
   * Cluster DNS domain, for the Service's fully qualified name.
   * @default 'cluster.local'
   */
  readonly clusterDomain?: string;
  /**
   * Validity of the CA. Long, because changing it means changing what the API server trusts.
   * @default 10 years
   */
  readonly caValidityMs?: number;
  /**
   * Validity of a serving certificate.
   * @default 1 year
   */
  readonly servingValidityMs?: number;
  /**
   * Renew a certificate once less than this fraction of its validity remains.
   * @default 1/3 (cert-manager's default)
   */
  readonly renewBeforeFraction?: number;
  /**
   * How often the Secret is read again even when nothing is due: picks up a renewal by another
   * replica and repairs a Secret or caBundle changed by hand.
   * @default 1 hour
   */
  readonly checkIntervalMs?: number;
  /**
   * How far back notBefore is set, for API servers whose clock is behind (client-go does the same).
   * @default 1 hour
   */
  readonly backdateMs?: number;
  /**
   * Logs issuance, CRD patches and failures; never key material.
   * @default no logs
   */
  readonly logger?: Logger;
}

interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

interface ClientConfig {
  url?: string;
  service?: { name?: string; namespace?: string; path?: string; port?: number };
  caBundle?: string;
}

interface Crd extends KubeObject {
  spec?: { conversion?: { strategy?: string; webhook?: { clientConfig?: ClientConfig } } };
}

/** Keys of the Secret: the kubernetes.io/tls pair, plus the CA bundle and the CA key that signs renewals. */
export const SECRET_KEYS = { cert: 'tls.crt', key: 'tls.key', caBundle: 'ca.crt', caKey: 'ca.key' } as const;

/** Writes that lose a race (409) are retried this many times after re-reading. */
const MAX_ATTEMPTS = 5;
/** Retry after a failed sync: 1 s, doubling, at most 5 minutes (or the check interval when shorter). */
const FAILURE_BACKOFF = { baseMs: 1000, maxMs: 5 * 60_000 };
/** A missing CRD (applied later, e.g. another Argo CD wave) is looked for again this soon. */
const MISSING_CRD_RECHECK_MS = 30_000;

const decode = (value: string | undefined) =>
  value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
const encode = (value: string) => Buffer.from(value, 'utf8').toString('base64');

/**
 * Built-in certificate mode: the operator is its own CA. It keeps a CA and a serving certificate
 * in one Secret, renews them before they expire, and makes the CRD's conversion webhook trust the
 * CA (`clientConfig.caBundle`).
 *
 * The Secret keeps the CA key (`ca.key`) next to the serving key. That adds no exposure: the CA is
 * trusted by this one CRD's caBundle and nothing else, so whoever can read the Secret can already
 * impersonate the webhook with `tls.key`. In exchange the CA stays stable for years, serving
 * certificates renew without touching the CRD, and a renewed certificate is trusted the moment it
 * is served (a CA without its key would have to be replaced on every renewal, and the CRD with it).
 *
 * Every replica runs this and serves the webhook (the Service spreads conversions over them); they
 * coordinate through the Secret alone: creation races end in AlreadyExists, renewals carry the
 * resourceVersion they read, and the loser of either re-reads and adopts the winner's certificate.
 */
export class OperatorManagedCertificates implements TlsSource {
  private readonly options: OperatorManagedCertificatesOptions;
  private readonly secretName: string;
  private readonly names: ServingNames;
  private readonly commonName: string;
  private readonly caValidityMs: number;
  private readonly servingValidityMs: number;
  private readonly renewBeforeFraction: number;
  private readonly checkIntervalMs: number;
  private readonly backdateMs: number;
  private readonly listeners: Array<() => void> = [];
  private served?: TlsCertificate;
  /** The material last read or written, to schedule the next renewal. */
  private stored?: StoredTls;
  private crdMissing = false;
  private syncing: Promise<unknown> = Promise.resolve();

  constructor(options: OperatorManagedCertificatesOptions) {
    this.options = options;
    this.secretName = options.secretName ?? WEBHOOK_SECRET_NAME;
    const serviceName = options.serviceName ?? WEBHOOK_SERVICE_NAME;
    this.commonName = `${serviceName}.${options.namespace}.svc`;
    // The API server verifies the certificate against the Service's name, whichever endpoint it dials.
    this.names = { dnsNames: webhookDnsNames(serviceName, options.namespace, options.clusterDomain), ipAddresses: [] };
    this.caValidityMs = options.caValidityMs ?? 3650 * DAY_MS;
    this.servingValidityMs = options.servingValidityMs ?? 365 * DAY_MS;
    this.renewBeforeFraction = options.renewBeforeFraction ?? 1 / 3;
    this.checkIntervalMs = options.checkIntervalMs ?? 60 * 60_000;
    this.backdateMs = options.backdateMs ?? 60 * 60_000;

    const fraction = this.renewBeforeFraction;
    if (!(fraction > 0 && fraction < 1))
      throw new Error(`renewBeforeFraction must be between 0 and 1 (exclusive), got ${fraction}`);
    for (const [name, value] of Object.entries({
      caValidityMs: this.caValidityMs,
      servingValidityMs: this.servingValidityMs,
      checkIntervalMs: this.checkIntervalMs,
    })) {
      if (!(value > 0)) throw new Error(`${name} must be positive, got ${value}`);
    }
    if (!(this.backdateMs >= 0)) throw new Error(`backdateMs must not be negative, got ${this.backdateMs}`);
    // A fresh certificate must not already be due, or every check would issue another one.
    for (const [name, validityMs] of [
      ['servingValidityMs', this.servingValidityMs],
      ['caValidityMs', this.caValidityMs],
    ] as const) {
      if (fraction * (validityMs + this.backdateMs) >= validityMs) {
        throw new Error(
          `${name} (${validityMs} ms) is too short for backdateMs (${this.backdateMs} ms) and renewBeforeFraction (${fraction}): ` +
            'a new certificate would be due for renewal at once; lengthen the validity or shorten backdateMs',
        );
      }
    }
    if (this.servingValidityMs >= this.caValidityMs) {
      throw new Error(
        `servingValidityMs (${this.servingValidityMs} ms) must be shorter than caValidityMs (${this.caValidityMs} ms)`,
      );
    }
  }

  current(): TlsCertificate | undefined {
    return this.served;
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Syncs now, then whenever a certificate is due or the check interval passed; retries failures with backoff. */
  async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      let delay: number;
      try {
        await this.sync();
        failures = 0;
        delay = this.nextCheckDelay();
      } catch (error) {
        failures++;
        delay = backoffDelay(failures, {
          ...FAILURE_BACKOFF,
          maxMs: Math.min(FAILURE_BACKOFF.maxMs, this.checkIntervalMs),
        });
        this.options.logger?.error(
          { secret: `${this.options.namespace}/${this.secretName}`, error: (error as Error).message, retryInMs: delay },
          'could not sync the conversion webhook certificate',
        );
      }
      await sleep(delay, signal);
    }
  }

  /**
   * One pass: make the Secret hold a valid CA and serving certificate (creating or renewing them),
   * make the CRD trust the CA, then serve the certificate. Throws on API errors. Concurrent calls
   * run one after the other.
   */
  sync(): Promise<void> {
    const pass = this.syncing.then(() => this.syncOnce());
    this.syncing = pass.catch(() => undefined);
    return pass;
  }

  private async syncOnce(): Promise<void> {
    const stored = await this.ensureSecret();
    this.stored = stored;
    // The CRD first: a certificate from a new CA is served only once the API server trusts that CA.
    await this.ensureCrd(stored);
    this.publish({ cert: stored.cert!, key: stored.key! });
  }

  private async ensureSecret(): Promise<StoredTls> {
    const { client, namespace, logger } = this.options;
    for (let attempt = 1; ; attempt++) {
      const secret = await client.get<Secret>(SECRETS, { namespace, name: this.secretName });
      const stored = secret ? readSecret(secret) : undefined;
      const plan = planRenewal(stored, this.names, Date.now(), this.renewBeforeFraction);
      if (plan.action === 'keep') return stored!;

      const next = await this.renew(plan, stored);
      const data = {
        [SECRET_KEYS.cert]: encode(next.cert!),
        [SECRET_KEYS.key]: encode(next.key!),
        [SECRET_KEYS.caBundle]: encode(next.caBundle!),
        [SECRET_KEYS.caKey]: encode(next.caKey!),
      };
      try {
        if (secret) {
          // PUT with the resourceVersion just read: fails with 409 if another replica wrote in between.
          await client.update<Secret>(SECRETS, { ...secret, data: { ...secret.data, ...data } });
        } else {
          await client.create<Secret>(SECRETS, {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: this.secretName, namespace, labels: operatorLabels('webhook') },
            type: 'kubernetes.io/tls',
            data,
          });
        }
      } catch (error) {
        if (isConflict(error) && attempt < MAX_ATTEMPTS) {
          logger?.info(
            { secret: `${namespace}/${this.secretName}` },
            'another replica wrote the webhook Secret first; reading it again',
          );
          continue;
        }
        throw error;
      }
      const cert = parseCertificate(next.cert!)!;
      logger?.info(
        {
          secret: `${namespace}/${this.secretName}`,
          reason: plan.reason,
          newCa: plan.action === 'rotate-ca',
          serialNumber: cert.serialNumber,
          notAfter: cert.validToDate.toISOString(),
          names: [...this.names.dnsNames, ...this.names.ipAddresses],
        },
        plan.action === 'rotate-ca'
          ? 'created a new webhook CA and serving certificate'
          : 'issued a new webhook serving certificate',
      );
      return next;
    }
  }

  private async renew(
    plan: Exclude<RenewalPlan, { action: 'keep' }>,
    stored: StoredTls | undefined,
  ): Promise<StoredTls> {
    const now = Date.now();
    const issue = { now, backdateMs: this.backdateMs };
    let ca: TlsCertificate;
    let trusted: string[];
    if (plan.action === 'rotate-ca') {
      ca = await createCertificateAuthority({
        ...issue,
        commonName: `${OPERATOR_NAME}-webhook-ca@${Math.floor(now / 1000)}`,
        validityMs: this.caValidityMs,
      });
      trusted = [ca.cert, ...plan.keep];
    } else {
      trusted = validCertificates(stored!.caBundle!, now);
      ca = { cert: trusted[0], key: stored!.caKey! };
    }
    const serving = await issueServingCertificate(ca, {
      ...issue,
      ...this.names,
      commonName: this.commonName,
      validityMs: this.servingValidityMs,
    });
    return { cert: serving.cert, key: serving.key, caBundle: trusted.join(''), caKey: ca.key };
  }

  /**
   * Makes the CRD's conversion webhook trust every valid CA of the Secret, reading it first and
   * writing only when needed. "Trust every CA of ours" rather than "equal to ours": a replica whose
   * read of the Secret is a moment old holds a subset of the newest bundle (the previous CA stays
   * in it until it expires), so it never removes a CA another replica has just added.
   */
  private async ensureCrd(stored: StoredTls): Promise<void> {
    const { client, crdName, logger } = this.options;
    const crd = await client.get<Crd>(CRDS, { name: crdName });
    this.crdMissing = !crd;
    if (!crd) {
      logger?.warn(
        { crd: crdName },
        'the CustomResourceDefinition does not exist yet: its caBundle is set once it is applied',
      );
      return;
    }
    const conversion = crd.spec?.conversion;
    if (conversion?.strategy !== 'Webhook') {
      logger?.warn(
        { crd: crdName, strategy: conversion?.strategy ?? 'None' },
        'the CRD does not convert through a webhook: nothing to trust',
      );
      return;
    }
    const clientConfig = conversion.webhook?.clientConfig ?? {};
    const now = Date.now();
    const ours = validCertificates(stored.caBundle!, now);
    const theirs = splitPemCertificates(decode(clientConfig.caBundle) ?? '').map(parseCertificate);
    const theirFingerprints = new Set(theirs.map((cert) => cert?.fingerprint256));
    const reasons: string[] = [];
    if (ours.some((pem) => !theirFingerprints.has(parseCertificate(pem)!.fingerprint256)))
      reasons.push('caBundle does not trust the current CA');
    if (theirs.some((cert) => !cert || cert.validToDate.getTime() <= now))
      reasons.push('caBundle holds an expired or unreadable certificate');
    if (!clientConfig.service) {
      // Left by an earlier version that pointed the CRD at a local URL: an apply would add the
      // Service next to it, which the API server refuses; a replace puts the manifest back.
      logger?.warn(
        { crd: crdName, url: clientConfig.url },
        'the CRD conversion webhook points at a URL, not the webhook Service: put the manifest back with kubectl replace -f (kubectl apply fails with "exactly one of url or service is required")',
      );
    }
    if (reasons.length === 0) return;

    // Only the trust: where the API server calls (the Service) is the manifest's to say.
    await client.patch(
      CRDS,
      { name: crdName },
      'merge',
      { spec: { conversion: { webhook: { clientConfig: { caBundle: encode(ours.join('')) } } } } },
      OPERATOR_NAME,
    );
    logger?.info({ crd: crdName, reasons }, 'updated the CRD conversion webhook caBundle');
  }

  private publish(certificate: TlsCertificate): void {
    if (this.served && this.served.cert === certificate.cert && this.served.key === certificate.key) return;
    this.served = certificate;
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        this.options.logger?.error({ error: (error as Error).message }, 'a webhook certificate listener failed');
      }
    }
  }

  /** Until the earliest renewal of the CA or serving certificate, at most the check interval, at least 1 s. */
  private nextCheckDelay(): number {
    let delay = this.checkIntervalMs;
    if (this.crdMissing) delay = Math.min(delay, MISSING_CRD_RECHECK_MS);
    const now = Date.now();
    for (const pem of [this.stored?.cert, this.stored?.caBundle && splitPemCertificates(this.stored.caBundle)[0]]) {
      const cert = pem ? parseCertificate(pem) : undefined;
      if (cert) delay = Math.min(delay, renewalTime(cert, this.renewBeforeFraction).getTime() - now);
    }
    return Math.max(1000, delay);
  }
}

function readSecret(secret: Secret): StoredTls {
  const data = secret.data ?? {};
  return {
    cert: decode(data[SECRET_KEYS.cert]),
    key: decode(data[SECRET_KEYS.key]),
    caBundle: decode(data[SECRET_KEYS.caBundle]),
    caKey: decode(data[SECRET_KEYS.caKey]),
  };
}

/** The bundle's certificates that are readable and not expired, in order. */
function validCertificates(bundle: string, now: number): string[] {
  return splitPemCertificates(bundle).filter((pem) => {
    const cert = parseCertificate(pem);
    return cert !== undefined && cert.validToDate.getTime() > now;
  });
}
