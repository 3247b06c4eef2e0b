import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { captureLogs } from '../../harness/operator/logs.ts';
import { CertificateFiles } from '../../operator/src/webhook/certificate-files.ts';
import {
  createCertificateAuthority,
  issueServingCertificate,
  type TlsCertificate,
} from '../../operator/src/webhook/certificates.ts';

const DAY_MS = 24 * 3600_000;

let dir: string;
let ca: TlsCertificate;
const issue = () => issueServingCertificate(ca, { commonName: 'w', dnsNames: ['w'], validityMs: DAY_MS });

/**
 * Writes a pair the way the kubelet updates a Secret volume: files are symlinks into a
 * `..data` link, which is swapped atomically to a new timestamped folder.
 */
async function project(pair: { cert: string; key: string }) {
  const version = join(dir, `..${Date.now()}_${Math.random().toString(36).slice(2)}`);
  await mkdir(version);
  await writeFile(join(version, 'tls.crt'), pair.cert);
  await writeFile(join(version, 'tls.key'), pair.key);
  await symlink(version, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const file of ['tls.crt', 'tls.key']) {
    await symlink(join('..data', file), join(dir, file)).catch(() => undefined);
  }
}

beforeAll(async () => {
  ca = await createCertificateAuthority({ commonName: 'cert-manager-like', validityMs: 30 * DAY_MS });
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webhook-tls-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('CertificateFiles', () => {
  test('loads tls.crt and tls.key, notifies once, and not again while they are unchanged', async () => {
    const pair = await issue();
    await project(pair);
    const files = new CertificateFiles({ dir });
    let changes = 0;
    files.onChange(() => changes++);
    expect(await files.reload()).toBe(true);
    expect(files.current()).toEqual(pair);
    expect(await files.reload()).toBe(false);
    expect(changes).toBe(1);
  });

  test('picks up a renewed pair (atomic volume update) while running', async () => {
    const first = await issue();
    await project(first);
    const files = new CertificateFiles({ dir, pollMs: 50 });
    const controller = new AbortController();
    const running = files.run(controller.signal);
    try {
      await new Promise<void>((resolve) => files.onChange(() => files.current()?.cert === first.cert && resolve()));
      const renewed = await issue();
      const reloaded = new Promise<void>((resolve) =>
        files.onChange(() => files.current()?.cert === renewed.cert && resolve()),
      );
      await project(renewed);
      await reloaded;
      expect(files.current()).toEqual(renewed);
    } finally {
      controller.abort();
      await running;
    }
  });

  test('keeps the previous pair when the key does not match the certificate, and logs it once', async () => {
    const first = await issue();
    const second = await issue();
    await project(first);
    const { logs, logger } = captureLogs();
    const files = new CertificateFiles({ dir, logger });
    await files.reload();
    await project({ cert: second.cert, key: first.key });
    expect(await files.reload()).toBe(false);
    expect(await files.reload()).toBe(false);
    expect(files.current()).toEqual(first);
    const warnings = logs.filter((l) => l.includes('does not belong to'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('keeping the previous certificate');
  });

  test('without files it serves nothing, says where it looked, and never throws', async () => {
    const { logs, logger } = captureLogs();
    const files = new CertificateFiles({ dir: join(dir, 'missing'), logger });
    expect(await files.reload()).toBe(false);
    expect(files.current()).toBeUndefined();
    expect(logs.join('')).toMatch(
      /cannot read the webhook certificate: .*ENOENT.*is the webhook Secret mounted at .*missing\?/,
    );
  });

  test('refuses files that are not PEM, and never logs their content', async () => {
    const pair = await issue();
    await writeFile(join(dir, 'tls.crt'), 'not a certificate');
    await writeFile(join(dir, 'tls.key'), pair.key);
    const { logs, logger } = captureLogs();
    const files = new CertificateFiles({ dir, logger });
    expect(await files.reload()).toBe(false);
    await writeFile(join(dir, 'tls.crt'), pair.cert);
    await writeFile(join(dir, 'tls.key'), 'not a key');
    expect(await files.reload()).toBe(false);
    const all = logs.join('');
    expect(all).toMatch(/tls\.crt does not hold a PEM certificate/);
    expect(all).toMatch(/tls\.key does not hold a readable private key/);
    expect(all).not.toContain(pair.key.split('\n')[1]);
  });

  test('reads other file names when told', async () => {
    const pair = await issue();
    await writeFile(join(dir, 'cert.pem'), pair.cert);
    await writeFile(join(dir, 'key.pem'), pair.key);
    const files = new CertificateFiles({ dir, certFile: 'cert.pem', keyFile: 'key.pem' });
    expect(await files.reload()).toBe(true);
    expect(() => new CertificateFiles({ dir, pollMs: 0 })).toThrow('pollMs must be positive');
  });
});
