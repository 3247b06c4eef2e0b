import { createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../controller/backoff.ts';
import { WEBHOOK_CERT_DIR } from '../library.ts';
import type { Logger } from '../observability/logger.ts';
import { parseCertificate, type TlsCertificate, type TlsSource } from './certificates.ts';

export interface CertificateFilesOptions {
  /**
   * Folder holding the certificate and key, typically a mounted Secret.
   * @default '/etc/webhook/tls' (where the operator Deployment mounts it in cert-manager mode)
   */
  readonly dir?: string;
  /**
   * How often the files are read again. The kubelet refreshes a mounted Secret within about a
   * minute of a change, so polling more often gains nothing.
   * @default 10000
   */
  readonly pollMs?: number;
  /**
   * File name of the certificate (PEM, leaf first).
   * @default 'tls.crt'
   */
  readonly certFile?: string;
  /**
   * File name of the private key (PEM).
   * @default 'tls.key'
   */
  readonly keyFile?: string;
  /**
   * Logs loads and problems with the files; never their content.
   * @default no logs
   */
  readonly logger?: Logger;
}

/**
 * cert-manager mode: the certificate comes from files (the webhook Secret, which cert-manager
 * fills and renews, mounted read-only). A changed pair is served once both files agree: the
 * kubelet swaps a Secret volume atomically, but a pair read during a swap, or a key that does not
 * match its certificate, is skipped until the next poll, and the previous pair stays in service.
 */
export class CertificateFiles implements TlsSource {
  private readonly options: CertificateFilesOptions;
  private readonly listeners: Array<() => void> = [];
  private loaded?: TlsCertificate;
  /** The last problem logged, so a persistent one is logged once, not every poll. */
  private lastProblem?: string;

  constructor(options: CertificateFilesOptions = {}) {
    this.options = options;
    const pollMs = options.pollMs ?? 10_000;
    if (!(pollMs > 0)) throw new Error(`pollMs must be positive, got ${pollMs}`);
  }

  current(): TlsCertificate | undefined {
    return this.loaded;
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.reload();
      await sleep(this.options.pollMs ?? 10_000, signal);
    }
  }

  /**
   * Reads the files once; serves them when they changed and hold a matching pair. Returns whether
   * the served certificate changed. Never throws: a problem is logged and the previous pair kept.
   */
  async reload(): Promise<boolean> {
    const dir = this.options.dir ?? WEBHOOK_CERT_DIR;
    const certPath = join(dir, this.options.certFile ?? 'tls.crt');
    const keyPath = join(dir, this.options.keyFile ?? 'tls.key');
    let cert: string;
    let key: string;
    try {
      [cert, key] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    } catch (error) {
      this.problem(
        `cannot read the webhook certificate: ${(error as Error).message} (is the webhook Secret mounted at ${dir}?)`,
      );
      return false;
    }
    if (this.loaded && this.loaded.cert === cert && this.loaded.key === key) return false;

    const parsed = parseCertificate(cert);
    if (!parsed) {
      this.problem(`${certPath} does not hold a PEM certificate`);
      return false;
    }
    let matches: boolean;
    try {
      matches = parsed.checkPrivateKey(createPrivateKey(key));
    } catch {
      this.problem(`${keyPath} does not hold a readable private key`);
      return false;
    }
    if (!matches) {
      this.problem(
        `${keyPath} does not belong to ${certPath} (files being replaced?); keeping the previous certificate`,
      );
      return false;
    }

    this.loaded = { cert, key };
    this.lastProblem = undefined;
    this.options.logger?.info(
      { dir, serialNumber: parsed.serialNumber, notAfter: parsed.validToDate.toISOString() },
      'loaded the conversion webhook certificate',
    );
    if (parsed.validToDate.getTime() <= Date.now()) {
      this.options.logger?.warn(
        { dir, notAfter: parsed.validToDate.toISOString() },
        'the webhook certificate has expired: check that cert-manager renews it',
      );
    }
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        this.options.logger?.error({ error: (error as Error).message }, 'a webhook certificate listener failed');
      }
    }
    return true;
  }

  private problem(message: string): void {
    if (message === this.lastProblem) return;
    this.lastProblem = message;
    this.options.logger?.warn({ dir: this.options.dir ?? WEBHOOK_CERT_DIR }, message);
  }
}
