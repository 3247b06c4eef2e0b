import 'reflect-metadata';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import {
  BasicConstraintsExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  X509Certificate as PeculiarCertificate,
} from '@peculiar/x509';
import { webhookDnsNames } from '../../lib/operator/names.ts';
import {
  createCertificateAuthority,
  firstCertificate,
  issueServingCertificate,
  planRenewal,
  renewalTime,
  type ServingNames,
  splitPemCertificates,
  type TlsCertificate,
  uncoveredNames,
} from '../../operator/src/webhook/certificates.ts';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;
const NOW = Date.UTC(2030, 0, 1);
const names: ServingNames = {
  dnsNames: webhookDnsNames('website-operator-webhook', 'website-system'),
  ipAddresses: ['127.0.0.1'],
};

let ca: TlsCertificate;
let serving: TlsCertificate;
beforeAll(async () => {
  ca = await createCertificateAuthority({
    commonName: 'website-operator-webhook-ca@1',
    validityMs: 3650 * DAY_MS,
    backdateMs: HOUR_MS,
    now: NOW,
  });
  serving = await issueServingCertificate(ca, {
    commonName: 'website-operator-webhook.website-system.svc',
    ...names,
    validityMs: 365 * DAY_MS,
    backdateMs: HOUR_MS,
    now: NOW,
  });
});

describe('webhookDnsNames', () => {
  test('cover every name of the Service, down to the fully qualified one', () => {
    expect(webhookDnsNames('website-operator-webhook', 'website-system')).toEqual([
      'website-operator-webhook',
      'website-operator-webhook.website-system',
      'website-operator-webhook.website-system.svc',
      'website-operator-webhook.website-system.svc.cluster.local',
    ]);
    expect(webhookDnsNames('hook', 'ns', 'corp.internal').at(-1)).toBe('hook.ns.svc.corp.internal');
  });
});

describe('createCertificateAuthority', () => {
  test('is a self-signed ECDSA P-256 CA for end-entity certificates only, valid from the backdate for the validity', () => {
    const cert = new X509Certificate(ca.cert);
    expect(cert.ca).toBe(true);
    expect(cert.subject).toBe('CN=website-operator-webhook-ca@1');
    expect(cert.checkIssued(cert)).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(cert.validFromDate.getTime()).toBe(NOW - HOUR_MS);
    expect(cert.validToDate.getTime()).toBe(NOW + 3650 * DAY_MS);
    const parsed = new PeculiarCertificate(ca.cert);
    expect(parsed.getExtension(BasicConstraintsExtension)).toMatchObject({ ca: true, pathLength: 0, critical: true });
    expect(parsed.getExtension(KeyUsagesExtension)?.usages).toBe(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign);
    expect(ca.key).toMatch(/^-----BEGIN PRIVATE KEY-----/);
  });

  test('serial numbers are positive and unique', async () => {
    const other = await createCertificateAuthority({ commonName: 'x', validityMs: DAY_MS });
    for (const pem of [ca.cert, other.cert, serving.cert]) {
      // A set top bit would make the DER integer negative, which Go's verifier rejects.
      expect(parseInt(new X509Certificate(pem).serialNumber.slice(0, 2), 16)).toBeLessThan(0x80);
    }
    expect(new X509Certificate(other.cert).serialNumber).not.toBe(new X509Certificate(ca.cert).serialNumber);
  });
});

describe('issueServingCertificate', () => {
  test('chains to the CA and covers every Service name and the IP', () => {
    const cert = new X509Certificate(serving.cert);
    const caCert = new X509Certificate(ca.cert);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.subjectAltName).toBe(
      'DNS:website-operator-webhook, DNS:website-operator-webhook.website-system, DNS:website-operator-webhook.website-system.svc, ' +
        'DNS:website-operator-webhook.website-system.svc.cluster.local, IP Address:127.0.0.1',
    );
    expect(uncoveredNames(cert, names)).toEqual([]);
    expect(uncoveredNames(cert, { dnsNames: ['other.website-system.svc'], ipAddresses: ['10.0.0.1'] })).toEqual([
      'other.website-system.svc',
      '10.0.0.1',
    ]);
    // Extended key usage: TLS server only.
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const parsed = new PeculiarCertificate(serving.cert);
    expect(parsed.getExtension(KeyUsagesExtension)?.usages).toBe(KeyUsageFlags.digitalSignature);
    expect(parsed.getExtension(BasicConstraintsExtension)?.ca).toBe(false);
  });

  test('is valid from the backdate for its validity, and never beyond the CA', async () => {
    const cert = new X509Certificate(serving.cert);
    expect(cert.validFromDate.getTime()).toBe(NOW - HOUR_MS);
    expect(cert.validToDate.getTime()).toBe(NOW + 365 * DAY_MS);
    const longer = await issueServingCertificate(ca, {
      commonName: 'x',
      dnsNames: ['x'],
      validityMs: 20 * 365 * DAY_MS,
      now: NOW,
    });
    expect(new X509Certificate(longer.cert).validToDate).toEqual(new X509Certificate(ca.cert).validToDate);
  });

  test('a TLS client that trusts only the CA completes a handshake for the Service name and the IP', async () => {
    const fresh = await createCertificateAuthority({ commonName: 'live', validityMs: 30 * DAY_MS });
    const cert = await issueServingCertificate(fresh, { commonName: 'live', ...names, validityMs: DAY_MS });
    const server = createServer({ cert: cert.cert, key: cert.key }, (_, res) => res.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const handshake = (servername?: string) =>
      new Promise<boolean>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca: fresh.cert, servername }, () => {
          resolve(socket.authorized);
          socket.end();
        });
        socket.on('error', reject);
      });
    try {
      expect(await handshake('website-operator-webhook.website-system.svc')).toBe(true);
      expect(await handshake()).toBe(true);
      await expect(handshake('elsewhere.example.com')).rejects.toThrow(/Hostname\/IP does not match/);
    } finally {
      server.close();
    }
  });
});

describe('renewalTime', () => {
  test('is when a third of the validity (backdate included) remains', () => {
    const cert = new X509Certificate(serving.cert);
    const lifetime = 365 * DAY_MS + HOUR_MS;
    expect(renewalTime(cert, 1 / 3).getTime()).toBe(Math.round(NOW + 365 * DAY_MS - lifetime / 3));
  });
});

describe('planRenewal', () => {
  const stored = () => ({ caBundle: ca.cert, caKey: ca.key, cert: serving.cert, key: serving.key });
  let due: number;
  beforeAll(() => {
    due = renewalTime(new X509Certificate(serving.cert), 1 / 3).getTime();
  });

  test('keeps valid material that covers the names and is not due', () => {
    expect(planRenewal(stored(), names, NOW, 1 / 3)).toEqual({ action: 'keep' });
    expect(planRenewal(stored(), names, due - 1000, 1 / 3)).toEqual({ action: 'keep' });
  });

  test('issues a serving certificate once less than a third of its validity remains, or after it expired', () => {
    expect(planRenewal(stored(), names, due + 1000, 1 / 3)).toEqual({
      action: 'issue',
      reason: `the serving certificate expires at ${new Date(NOW + 365 * DAY_MS).toISOString()}: less than a third of its validity remains`,
    });
    expect(planRenewal(stored(), names, NOW + 366 * DAY_MS, 1 / 3)).toMatchObject({
      action: 'issue',
      reason: expect.stringMatching(/serving certificate expired at/),
    });
    // With a smaller fraction the same moment is not due yet.
    expect(planRenewal(stored(), names, due + 1000, 0.1)).toEqual({ action: 'keep' });
  });

  test('issues a serving certificate when it is missing, unreadable, mismatched, from another CA or missing a name', async () => {
    const other = await createCertificateAuthority({ commonName: 'other', validityMs: 3650 * DAY_MS, now: NOW });
    const foreign = await issueServingCertificate(other, {
      commonName: 'x',
      ...names,
      validityMs: 365 * DAY_MS,
      now: NOW,
    });
    const cases: [Record<string, string | undefined>, RegExp][] = [
      [{ cert: undefined }, /no serving certificate \(tls\.crt, tls\.key\)/],
      [{ key: undefined }, /no serving certificate/],
      [{ cert: 'garbage' }, /tls\.crt does not hold a readable certificate/],
      [{ key: 'garbage' }, /tls\.key is not a readable private key/],
      [{ key: ca.key }, /tls\.key does not belong to tls\.crt/],
      [{ cert: foreign.cert, key: foreign.key }, /tls\.crt was not issued by the current CA/],
    ];
    for (const [change, reason] of cases) {
      expect(planRenewal({ ...stored(), ...change }, names, NOW, 1 / 3)).toEqual({
        action: 'issue',
        reason: expect.stringMatching(reason),
      });
    }
    const moreNames = {
      ...names,
      ipAddresses: ['127.0.0.1', '10.1.2.3'],
      dnsNames: [...names.dnsNames, 'extra.example.com'],
    };
    expect(planRenewal(stored(), moreNames, NOW, 1 / 3)).toEqual({
      action: 'issue',
      reason: 'tls.crt does not cover extra.example.com, 10.1.2.3',
    });
  });

  test('creates a CA when there is no Secret or no usable CA certificate, keeping nothing', () => {
    expect(planRenewal(undefined, names, NOW, 1 / 3)).toEqual({
      action: 'rotate-ca',
      reason: 'the webhook Secret does not exist',
      keep: [],
    });
    expect(planRenewal({ ...stored(), caBundle: undefined }, names, NOW, 1 / 3)).toMatchObject({
      action: 'rotate-ca',
      reason: expect.stringMatching(/no CA certificate \(ca\.crt\)/),
      keep: [],
    });
    expect(planRenewal({ ...stored(), caBundle: 'not pem' }, names, NOW, 1 / 3)).toMatchObject({
      action: 'rotate-ca',
      keep: [],
    });
    expect(planRenewal({ ...stored(), caBundle: serving.cert }, names, NOW, 1 / 3)).toMatchObject({
      action: 'rotate-ca',
      reason: "ca.crt's first certificate is not a CA certificate",
      keep: [],
    });
  });

  test('rotates the CA when its key is missing, wrong or not P-256, keeping the still-valid CA trusted meanwhile', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    for (const [caKey, reason] of [
      [undefined, /no CA key \(ca\.key\)/],
      [serving.key, /ca\.key does not belong to ca\.crt/],
      ['garbage', /ca\.key is not a readable private key/],
      [rsa, /ca\.key (does not belong to ca\.crt|is not an ECDSA P-256 key)/],
    ] as const) {
      const plan = planRenewal({ ...stored(), caKey }, names, NOW, 1 / 3);
      expect(plan).toEqual({
        action: 'rotate-ca',
        reason: expect.stringMatching(reason),
        keep: [splitPemCertificates(ca.cert)[0]],
      });
    }
  });

  test('rotates the CA once less than a third of its validity remains; an expired CA is not kept', () => {
    const caDue = renewalTime(new X509Certificate(ca.cert), 1 / 3).getTime();
    expect(planRenewal(stored(), names, caDue + 1000, 1 / 3)).toEqual({
      action: 'rotate-ca',
      reason: expect.stringMatching(/^the CA certificate expires at .*: less than a third of its validity remains$/),
      keep: [splitPemCertificates(ca.cert)[0]],
    });
    expect(planRenewal(stored(), names, NOW + 3651 * DAY_MS, 1 / 3)).toMatchObject({
      action: 'rotate-ca',
      reason: expect.stringMatching(/CA certificate expired/),
      keep: [],
    });
  });

  test('reads the current CA first in a bundle that still trusts the previous one', async () => {
    const previous = await createCertificateAuthority({ commonName: 'previous', validityMs: 3650 * DAY_MS, now: NOW });
    expect(planRenewal({ ...stored(), caBundle: ca.cert + previous.cert }, names, NOW, 1 / 3)).toEqual({
      action: 'keep',
    });
    expect(planRenewal({ ...stored(), caBundle: previous.cert + ca.cert }, names, NOW, 1 / 3)).toMatchObject({
      action: 'rotate-ca',
      reason: 'ca.key does not belong to ca.crt',
    });
  });
});

describe('firstCertificate', () => {
  test('resolves at once with a loaded certificate, or on the first change', async () => {
    expect(await firstCertificate({ current: () => serving, onChange: () => {}, run: async () => {} })).toBe(serving);
    let current: TlsCertificate | undefined;
    const listeners: Array<() => void> = [];
    const source = { current: () => current, onChange: (l: () => void) => listeners.push(l), run: async () => {} };
    const first = firstCertificate(source);
    current = serving;
    for (const listener of listeners) listener();
    expect(await first).toBe(serving);
  });

  test('rejects when stopped before a certificate arrives', async () => {
    const controller = new AbortController();
    const waiting = firstCertificate(
      { current: () => undefined, onChange: () => {}, run: async () => {} },
      controller.signal,
    );
    controller.abort();
    await expect(waiting).rejects.toThrow('stopped before the webhook certificate was loaded');
  });
});
