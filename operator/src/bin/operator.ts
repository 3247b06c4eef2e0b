#!/usr/bin/env node
// The operator process: `npm run operator` (against $KUBECONFIG) and the operator image's entrypoint.
import { readFileSync } from 'node:fs';
import { KubeClient } from '../controller/kube-client.ts';
import { createLogger } from '../observability/logger.ts';
import { OperatorMetrics } from '../observability/metrics.ts';
import { startTracing, tracingSettings } from '../observability/tracing.ts';
import { Operator } from '../reconciler/operator.ts';
import { conversionWebhook } from '../webhook/webhook-component.ts';
import { ConfigError, loadConfig } from './config.ts';

const logger = createLogger();

/** The operator package's version (service.version of the operator's traces), from the nearest package.json up from here. */
function packageVersion(): string {
  for (let dir = new URL('.', import.meta.url); ; dir = new URL('..', dir)) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@website-stack/operator' && pkg.version) return pkg.version;
    } catch {
      // no package.json here
    }
    if (dir.pathname === '/') return 'unknown';
  }
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    logger.fatal(error.message);
    process.exit(2);
  }
  const tracingConfig = tracingSettings(process.env);
  const tracing = tracingConfig ? startTracing(tracingConfig, packageVersion()) : undefined;
  if (tracingConfig) logger.info({ serviceName: tracingConfig.serviceName, samplingRatio: tracingConfig.samplingRatio }, 'tracing to OTEL_EXPORTER_OTLP_ENDPOINT');
  const metrics = new OperatorMetrics();
  const client = KubeClient.fromEnvironment({ qps: config.qps, burst: config.burst, metrics, userAgent: 'website-operator' });
  const components = config.webhook
    ? [conversionWebhook(config.webhook, { client, group: config.group, namespace: config.operatorNamespace, clusterDomain: config.clusterDomain, logger, metrics })]
    : [];
  const operator = new Operator(config, { client, logger, metrics, components });

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
    operator.stop().then(() => tracing?.shutdown()).then(
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
  process.on('unhandledRejection', (reason) => logger.error({ error: reason instanceof Error ? reason.message : String(reason) }, 'unhandled rejection'));

  await operator.start();
}

main().catch((error: Error) => {
  logger.fatal({ error: error.message }, 'operator failed to start');
  process.exit(1);
});
