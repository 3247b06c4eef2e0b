import { Construct } from 'constructs';
import { singlePodLintExemptions } from '../lint.ts';
import { HOTROD_PORTS, serviceHost, TRACING_IMAGES, TRACING_NAMESPACE } from './names.ts';
import { type TracingResources, TracingWorkload } from './tracing-workload.ts';

export const DEFAULT_HOTROD_RESOURCES: TracingResources = {
  cpuRequest: '50m',
  memoryRequest: '64Mi',
  memoryLimit: '256Mi',
};

export interface HotRodProps {
  /**
   * Base URL of the OTLP/HTTP endpoint HotROD sends spans to (`OTEL_EXPORTER_OTLP_ENDPOINT`),
   * e.g. an OtelCollector's `otlpHttpEndpoint`.
   */
  readonly otlpEndpoint: string;
  /** Jaeger's UI, for HotROD's "find trace" links. */
  readonly jaegerUiUrl: string;
  /** @default 'tracing' */
  readonly namespace?: string;
  /** @default 'hotrod' */
  readonly name?: string;
  /** @default 'jaegertracing/example-hotrod:1.76.0' */
  readonly image?: string;
  /** @default DEFAULT_HOTROD_RESOURCES */
  readonly resources?: TracingResources;
  /**
   * A Secret with `tls.crt`, `tls.key` and `ca.crt` (cert-manager's form), for an `https://`
   * endpoint that requires mutual TLS (the production gateway): HotROD presents the certificate and
   * verifies the collector against the CA.
   * @default none: plain OTLP, or TLS verified against the image's public CAs for `https://`
   */
  readonly clientTls?: HotRodClientTls;
}

/** HotROD's client certificate for OTLP over mutual TLS. */
export interface HotRodClientTls {
  /** A Secret with `tls.crt`, `tls.key` and `ca.crt`. */
  readonly secretName: string;
}

/** Where the client certificate is mounted in the HotROD container. */
const CLIENT_TLS_DIR = '/etc/hotrod/otlp-tls';

/**
 * HotROD, the reference workload (spec §1.10): frontend, customer, driver and route in one
 * process (`hotrod all`); `GET /dispatch?customer=123` on the frontend produces one trace across
 * all four. Only the frontend is exposed.
 */
export class HotRod extends Construct {
  public readonly workload: TracingWorkload;
  /** `http://<service>.<namespace>.svc:8080`. */
  public readonly frontendUrl: string;

  constructor(scope: Construct, id: string, props: HotRodProps) {
    super(scope, id);
    if (!/^https?:\/\/[^/]+$/.test(props.otlpEndpoint)) {
      throw new Error(
        `HotRod at '${this.node.path}': otlpEndpoint must be a base URL with scheme, host and port and no path (http://otel-collector.tracing.svc:4318), got '${props.otlpEndpoint}'`,
      );
    }
    if (props.clientTls && !props.otlpEndpoint.startsWith('https://'))
      throw new Error(
        `HotRod at '${this.node.path}': clientTls needs an https:// otlpEndpoint (a client certificate is presented over TLS only), got '${props.otlpEndpoint}'`,
      );
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    const name = props.name ?? 'hotrod';
    const tls = props.clientTls;
    // The OpenTelemetry SDK's own variables for the exporter's TLS files.
    const tlsEnv = tls
      ? [
          { name: 'OTEL_EXPORTER_OTLP_CERTIFICATE', value: `${CLIENT_TLS_DIR}/ca.crt` },
          { name: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', value: `${CLIENT_TLS_DIR}/tls.crt` },
          { name: 'OTEL_EXPORTER_OTLP_CLIENT_KEY', value: `${CLIENT_TLS_DIR}/tls.key` },
        ]
      : [];
    this.workload = new TracingWorkload(this, 'Workload', {
      namespace,
      name,
      component: 'example-app',
      image: props.image ?? TRACING_IMAGES.hotrod,
      args: ['all', `--jaeger-ui=${props.jaegerUiUrl}`],
      env: [{ name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: props.otlpEndpoint }, ...tlsEnv],
      ...(tls
        ? {
            secretMounts: [
              { secretName: tls.secretName, mountPath: CLIENT_TLS_DIR, keys: ['tls.crt', 'tls.key', 'ca.crt'] },
            ],
          }
        : {}),
      ports: { ...HOTROD_PORTS },
      servicePorts: ['frontend'],
      // A TCP check: an HTTP probe would put a trace of every probe into Jaeger.
      health: { port: 'frontend' },
      resources: props.resources ?? DEFAULT_HOTROD_RESOURCES,
      lint: singlePodLintExemptions('HotROD is a demo workload: one pod produces every trace the examples need.'),
    });
    this.frontendUrl = `http://${serviceHost(name, namespace)}:${HOTROD_PORTS.frontend}`;
  }
}
