import type { KubeApi } from '../controller/kube-api.ts';
import type { Component } from '../controller/manager.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { CertificateFiles } from './certificate-files.ts';
import { firstCertificate, type TlsSource } from './certificates.ts';
import { ConversionWebhookServer } from './conversion-server.ts';
import { LocalServiceEndpoint } from './local-service-endpoint.ts';
import { OperatorManagedCertificates } from './operator-managed-certificates.ts';

export interface WebhookConfig {
  readonly port: number;
  /** 'operator': built-in CA and certificate in a Secret; 'files': a mounted Secret (cert-manager). */
  readonly certMode: 'operator' | 'files';
  readonly certDir: string;
  readonly secretName: string;
  readonly serviceName: string;
  /**
   * Outside a pod: make this process an endpoint of the webhook Service (LocalServiceEndpoint),
   * at `address` or, unset, at the API server's own address when it runs on this machine.
   * Undefined in a pod, where the Service selects the pod.
   */
  readonly localEndpoint?: { readonly address?: string };
}

/**
 * The conversion webhook as a part of the operator process: its certificate source runs in the
 * background (creating, renewing and publishing the CA bundle, or watching mounted files), the
 * HTTPS server answers ConversionReviews on every replica, leader or not. Outside a pod, once it
 * has a certificate, the process makes itself an endpoint of the webhook Service until it stops.
 */
export function conversionWebhook(
  config: WebhookConfig,
  context: {
    client: KubeApi;
    group: string;
    namespace: string;
    identity: string;
    clusterDomain: string;
    logger: Logger;
    metrics: OperatorMetrics;
  },
): Component {
  const { client, group, namespace, identity, clusterDomain, logger, metrics } = context;
  const tls: TlsSource =
    config.certMode === 'files'
      ? new CertificateFiles({ dir: config.certDir, logger })
      : new OperatorManagedCertificates({
          client,
          namespace,
          secretName: config.secretName,
          serviceName: config.serviceName,
          crdName: `websites.${group}`,
          clusterDomain,
          logger,
        });
  const server = new ConversionWebhookServer({ port: config.port, tls, logger, metrics, group });
  let certificates: Promise<void> = Promise.resolve();
  let endpoint: Promise<void> = Promise.resolve();
  return {
    name: 'conversion-webhook',
    async start(signal) {
      await server.start();
      certificates = tls
        .run(signal)
        .catch((error: Error) => logger.error({ error: error.message }, 'conversion webhook certificates stopped'));
      const local = config.localEndpoint;
      if (local) {
        const published = new LocalServiceEndpoint({
          client,
          namespace,
          serviceName: config.serviceName,
          port: server.port,
          identity,
          address: local.address,
          logger,
        });
        // Published once the server has a certificate to present: the API server calls at once.
        endpoint = firstCertificate(tls, signal).then(
          () => published.run(signal),
          () => undefined, // stopped before there was a certificate: nothing was published
        );
      }
      logger.info(
        { port: server.port, certMode: config.certMode, outsideCluster: Boolean(local) },
        'conversion webhook listening',
      );
    },
    async stop() {
      // The endpoint goes first, so the API server stops calling before the server closes.
      await endpoint;
      await certificates;
      await server.stop();
    },
    ready: () => server.isServing(),
  };
}
