#!/usr/bin/env node
// The operator process: `npm run operator` (against $KUBECONFIG) and the operator image's entrypoint.

// service.version of the operator's traces. A JSON import, so the bundle carries it (the image holds no package.json).
import operatorPackage from '../../package.json' with { type: 'json' };
import { KubeClient } from '../controller/kube-client.ts';
import { type Component, Manager } from '../controller/manager.ts';
import { createLogger } from '../observability/logger.ts';
import { OperatorMetrics } from '../observability/metrics.ts';
import { startTracing, tracingSettings } from '../observability/tracing.ts';
import { setupWebsiteController } from '../reconciler/website-controller.ts';
import { ConfigError, loadConfig } from './config.ts';

const logger = createLogger();

async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    logger.fatal(error.message);
    process.exit(2);
  }
  const tracingConfig = tracingSettings(process.env);
  const tracing = tracingConfig ? await startTracing(tracingConfig, operatorPackage.version) : undefined;
  if (tracingConfig)
    logger.info(
      { serviceName: tracingConfig.serviceName, samplingRatio: tracingConfig.samplingRatio },
      'tracing to OTEL_EXPORTER_OTLP_ENDPOINT',
    );
  const metrics = new OperatorMetrics();
  // The replica in the user agent: replicas share a ServiceAccount, and the audit log tells them apart by it.
  let client: KubeClient;
  try {
    client = KubeClient.fromEnvironment({
      qps: config.qps,
      burst: config.burst,
      http2: config.http2,
      metrics,
      userAgent: `website-operator/${config.identity}`,
    });
  } catch (error) {
    // No cluster to connect to, or a kubeconfig client-node cannot read: retrying cannot help.
    logger.fatal((error as Error).message);
    process.exit(2);
  }
  const components: Component[] = [];
  if (config.webhook) {
    // Loaded only when enabled: the webhook's X.509 and HTTPS server code is a chunk of its own in
    // the bundle (operator/bundle.ts), which a process with WEBHOOK_ENABLED=false never reads.
    const { conversionWebhook } = await import('../webhook/webhook-component.ts');
    components.push(
      conversionWebhook(config.webhook, {
        client,
        group: config.group,
        namespace: config.operatorNamespace,
        identity: config.identity,
        clusterDomain: config.clusterDomain,
        logger,
        metrics,
      }),
    );
  }
  const manager = new Manager(config, { client, logger, metrics, components });
  setupWebsiteController(manager, config);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing reconciles in flight, releasing the lease');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    deadline.unref();
    // Reconciles finish, then their spans are flushed.
    manager
      .stop()
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (error: Error) => {
          logger.error({ error: error.message }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // A stray rejection must not take reconciling down with it; it is a bug worth a log line.
  process.on('unhandledRejection', (reason) =>
    logger.error({ error: reason instanceof Error ? reason.message : String(reason) }, 'unhandled rejection'),
  );

  await manager.start();
}

main().catch((error: Error) => {
  logger.fatal({ error: error.message }, 'operator failed to start');
  process.exit(1);
});
