import type { KubeApi } from '../controller/kube-client.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import type { Component } from '../reconciler/operator.ts';
import { CertificateFiles } from './certificate-files.ts';
import type { TlsSource } from './certificates.ts';
import { ConversionWebhookServer } from './conversion-server.ts';
import { OperatorManagedCertificates } from './operator-managed-certificates.ts';

export interface WebhookConfig {
  readonly port: number;
  /** 'operator': built-in CA and certificate in a Secret; 'files': a mounted Secret (cert-manager). */
  readonly certMode: 'operator' | 'files';
  readonly certDir: string;
  readonly secretName: string;
  readonly serviceName: string;
  /** Set the CRD's clientConfig to this URL instead of the Service (an operator outside the cluster). */
  readonly url?: string;
}

/**
 * The conversion webhook as a part of the operator process: its certificate source runs in the
 * background (creating, renewing and publishing the CA bundle, or watching mounted files), the
 * HTTPS server answers ConversionReviews on every replica, leader or not.
 */
export function conversionWebhook(
  config: WebhookConfig,
  context: { client: KubeApi; group: string; namespace: string; clusterDomain: string; logger: Logger; metrics: OperatorMetrics },
): Component {
  const { client, group, namespace, clusterDomain, logger, metrics } = context;
  const tls: TlsSource =
    config.certMode === 'files'
      ? new CertificateFiles({ dir: config.certDir, logger })
      : new OperatorManagedCertificates({
          client,
          namespace,
          secretName: config.secretName,
          serviceName: config.serviceName,
          crdName: `websites.${group}`,
          webhookUrl: config.url,
          clusterDomain,
          logger,
        });
  const server = new ConversionWebhookServer({ port: config.port, tls, logger, metrics, group });
  let certificates: Promise<void> = Promise.resolve();
  return {
    name: 'conversion-webhook',
    async start(signal) {
      await server.start();
      certificates = tls.run(signal).catch((error: Error) => logger.error({ error: error.message }, 'conversion webhook certificates stopped'));
      logger.info({ port: server.port, certMode: config.certMode, url: config.url }, 'conversion webhook listening');
    },
    async stop() {
      await certificates;
      await server.stop();
    },
    ready: () => server.isServing(),
  };
}
