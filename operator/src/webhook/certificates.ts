/**
 * TLS for the conversion webhook: the TlsSource contract the HTTPS server reads its certificate
 * from, and the small PKI behind the operator-managed mode (a CA and a serving certificate, ECDSA
 * P-256), with the pure decision of when to renew what.
 *
 * Generation uses @peculiar/x509 on Node's WebCrypto; inspection uses node:crypto's
 * X509Certificate, which already checks issuers, host names and key pairs.
 */
// tsyringe, inside @peculiar/x509, throws at load time unless a Reflect metadata polyfill came first.
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** A certificate (PEM, leaf first) and its private key (PEM). */
export interface TlsCertificate {
  readonly cert: string;
  readonly key: string;
}

/**
 * Where the webhook server gets its certificate. `current()` is undefined until the first one is
 * loaded; `onChange` listeners run whenever `current()` changes (first load and every renewal), so
 * the server swaps certificates without a restart; `run` keeps the certificate current until
 * `signal` aborts.
 */
export interface TlsSource {
  current(): TlsCertificate | undefined;
  onChange(listener: () => void): void;
  run(signal: AbortSignal): Promise<void>;
}

/**
 * Resolves with the source's certificate as soon as it has one; rejects when `signal` aborts first.
 * For start-up: its listener stays registered (TlsSource has no way to remove one) and is inert after.
 */
export function firstCertificate(source: TlsSource, signal?: AbortSignal): Promise<TlsCertificate> {
  const current = source.current();
  if (current) return Promise.resolve(current);
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('stopped before the webhook certificate was loaded'));
    source.onChange(() => {
      const loaded = source.current();
      if (loaded) resolve(loaded);
    });
    signal?.addEventListener('abort', () => reject(new Error('stopped before the webhook certificate was loaded')), {
      once: true,
    });
  });
}

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Validity window of a certificate to issue. */
export interface IssueOptions {
  /** How long the certificate is valid from now, in milliseconds. */
  readonly validityMs: number;
  /**
   * How far notBefore lies in the past, so that a peer whose clock is a little behind accepts the
   * certificate at once.
   * @default 0
   */
  readonly backdateMs?: number;
  /**
   * The current time, in milliseconds since the epoch.
   * @default Date.now()
   */
  readonly now?: number;
}

export interface CertificateAuthorityOptions extends IssueOptions {
  /** Subject common name. */
  readonly commonName: string;
}

export interface ServingCertificateOptions extends IssueOptions {
  /** Subject common name (informational: clients verify the SANs). */
  readonly commonName: string;
  /** DNS subject alternative names. */
  readonly dnsNames: readonly string[];
  /**
   * IP address subject alternative names (IPv4 or IPv6).
   * @default none
   */
  readonly ipAddresses?: readonly string[];
}

/** A positive serial below 2^127: Go's verifier rejects negative serials, DER makes a set top bit negative. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] % 0x7f) + 1;
  return bytes.toString('hex');
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

/** PEM text ends with a newline, so that bundles are plain concatenations. */
function pemText(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return pemText(x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY'));
}

function validity(options: IssueOptions): { notBefore: Date; notAfter: Date } {
  const now = options.now ?? Date.now();
  return { notBefore: new Date(now - (options.backdateMs ?? 0)), notAfter: new Date(now + options.validityMs) };
}

/** A self-signed CA that may sign end-entity certificates only (path length 0). */
export async function createCertificateAuthority(options: CertificateAuthorityOptions): Promise<TlsCertificate> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: [{ CN: [options.commonName] }],
    ...validity(options),
    keys,
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: pemText(cert.toString('pem')), key: await privateKeyPem(keys.privateKey) };
}

/** A TLS server certificate signed by `ca`; it never outlives the CA. */
export async function issueServingCertificate(
  ca: TlsCertificate,
  options: ServingCertificateOptions,
): Promise<TlsCertificate> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey(
    'pkcs8',
    createPrivateKey(ca.key).export({ type: 'pkcs8', format: 'der' }),
    KEY_ALGORITHM,
    false,
    ['sign'],
  );
  const keys = await generateKeys();
  const { notBefore, notAfter } = validity(options);
  const names: x509.JsonGeneralNames = [
    ...options.dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: [{ CN: [options.commonName] }],
    issuer: caCert.subject,
    notBefore,
    // biome-ignore lint/complexity/useMathMinMax: Dates; Math.min would turn them into numbers.
    notAfter: notAfter > caCert.notAfter ? caCert.notAfter : notAfter,
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      // ECDSA keys sign the handshake; keyEncipherment is for RSA key transport only.
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return { cert: pemText(cert.toString('pem')), key: await privateKeyPem(keys.privateKey) };
}

/** The PEM certificates of a bundle, in order, each ending with a newline. */
export function splitPemCertificates(bundle: string): string[] {
  return (bundle.match(PEM_CERTIFICATE) ?? []).map(pemText);
}

/** The certificate, or undefined when `pem` does not hold one. */
export function parseCertificate(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

/** When a certificate is due for renewal: once less than `fraction` of its validity remains. */
export function renewalTime(cert: X509Certificate, fraction: number): Date {
  const notBefore = cert.validFromDate.getTime();
  const notAfter = cert.validToDate.getTime();
  return new Date(notAfter - fraction * (notAfter - notBefore));
}

/** The subject alternative names a serving certificate must cover: DNS names, and IP addresses. */
export interface ServingNames {
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

/** The names in `names` that `cert` does not cover (its SANs only, as Go's verifier does). */
export function uncoveredNames(cert: X509Certificate, names: ServingNames): string[] {
  return [
    ...names.dnsNames.filter((name) => cert.checkHost(name, { subject: 'never', wildcards: false }) === undefined),
    ...names.ipAddresses.filter((ip) => cert.checkIP(ip) === undefined),
  ];
}

/** What the webhook Secret holds (PEM), any of it possibly missing or corrupt. */
export interface StoredTls {
  /** `ca.crt`: the CA bundle the CRD trusts, current CA first. */
  readonly caBundle?: string;
  /** `ca.key`: the current CA's key. */
  readonly caKey?: string;
  /** `tls.crt`: the serving certificate. */
  readonly cert?: string;
  /** `tls.key`: its key. */
  readonly key?: string;
}

/**
 * What to do with the stored material:
 * - `keep`: everything is valid, covers the names and is not due;
 * - `issue`: the CA is fine, the serving certificate needs replacing (missing, corrupt, not from
 *   this CA, missing a name, or due);
 * - `rotate-ca`: the CA needs replacing (and with it the serving certificate). `keep` is the
 *   previous CA when it is still valid: the new bundle trusts both for a while, so replicas still
 *   serving a certificate of the previous CA keep working until they reload.
 */
export type RenewalPlan =
  | { readonly action: 'keep' }
  | { readonly action: 'issue'; readonly reason: string }
  | { readonly action: 'rotate-ca'; readonly reason: string; readonly keep: readonly string[] };

function isP256(keyPem: string): boolean {
  const key = createPrivateKey(keyPem);
  return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
}

/** Why `check` (checkPrivateKey's verdict) rejects a key meant for `certificate`. */
function keyProblem(check: 'unreadable' | 'mismatch' | 'not-p256', certificate: string): string {
  return {
    unreadable: 'is not a readable private key',
    mismatch: `does not belong to ${certificate}`,
    'not-p256': 'is not an ECDSA P-256 key',
  }[check];
}

function checkPrivateKey(cert: X509Certificate, keyPem: string): 'ok' | 'unreadable' | 'mismatch' | 'not-p256' {
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return 'mismatch';
    return isP256(keyPem) ? 'ok' : 'not-p256';
  } catch {
    return 'unreadable';
  }
}

function fractionText(fraction: number): string {
  return Math.abs(fraction - 1 / 3) < 1e-9 ? 'a third' : `${Math.round(fraction * 100)} %`;
}

function dueReason(what: string, cert: X509Certificate, now: number, fraction: number): string | undefined {
  const notAfter = cert.validToDate;
  if (notAfter.getTime() <= now) return `${what} expired at ${notAfter.toISOString()}`;
  if (renewalTime(cert, fraction).getTime() <= now) {
    return `${what} expires at ${notAfter.toISOString()}: less than ${fractionText(fraction)} of its validity remains`;
  }
  return undefined;
}

/**
 * Decides, from the stored material alone, whether to keep it, issue a new serving certificate or
 * rotate the CA. Pure: `now` and the policy are arguments, so every branch is unit-testable.
 */
export function planRenewal(
  stored: StoredTls | undefined,
  names: ServingNames,
  now: number,
  renewBeforeFraction: number,
): RenewalPlan {
  const rotate = (reason: string, previous?: X509Certificate, previousPem?: string): RenewalPlan => ({
    action: 'rotate-ca',
    reason,
    keep: previous && previousPem && previous.ca && previous.validToDate.getTime() > now ? [previousPem] : [],
  });
  if (!stored) return rotate('the webhook Secret does not exist');
  const caPem = stored.caBundle ? splitPemCertificates(stored.caBundle)[0] : undefined;
  if (!caPem) return rotate('the Secret has no CA certificate (ca.crt)');
  const ca = parseCertificate(caPem);
  if (!ca) return rotate('ca.crt does not hold a readable certificate');
  if (!ca.ca) return rotate("ca.crt's first certificate is not a CA certificate");
  if (!stored.caKey) return rotate('the Secret has no CA key (ca.key) to sign a serving certificate with', ca, caPem);
  const caKey = checkPrivateKey(ca, stored.caKey);
  if (caKey !== 'ok') {
    const why = keyProblem(caKey, 'ca.crt');
    return rotate(`ca.key ${why}`, ca, caPem);
  }
  const caDue = dueReason('the CA certificate', ca, now, renewBeforeFraction);
  if (caDue) return rotate(caDue, ca, caPem);

  if (!stored.cert || !stored.key)
    return { action: 'issue', reason: 'the Secret has no serving certificate (tls.crt, tls.key)' };
  const cert = parseCertificate(stored.cert);
  if (!cert) return { action: 'issue', reason: 'tls.crt does not hold a readable certificate' };
  const key = checkPrivateKey(cert, stored.key);
  if (key !== 'ok') {
    const why = keyProblem(key, 'tls.crt');
    return { action: 'issue', reason: `tls.key ${why}` };
  }
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    return { action: 'issue', reason: 'tls.crt was not issued by the current CA' };
  const missing = uncoveredNames(cert, names);
  if (missing.length > 0) return { action: 'issue', reason: `tls.crt does not cover ${missing.join(', ')}` };
  const due = dueReason('the serving certificate', cert, now, renewBeforeFraction);
  if (due) return { action: 'issue', reason: due };
  return { action: 'keep' };
}
