import { BlockList, isIP } from 'node:net';
import { hostname } from 'node:os';
import {
  ALL_NAMESPACES,
  DEFAULT_GROUP,
  LEASE_NAME,
  MANAGED_BY,
  OPERATOR_NAMESPACE,
  OPERATOR_PORTS,
  WEBHOOK_CERT_DIR,
  WEBHOOK_SECRET_NAME,
  WEBHOOK_SERVICE_NAME,
  type WebsiteGateway,
  watchNamespacesProblem,
  websiteGatewayProblems,
} from '../library.ts';
import type { OperatorConfig } from '../reconciler/website-controller.ts';
import type { WebhookConfig } from '../webhook/webhook-component.ts';

/**
 * The operator's configuration, from environment variables (the operator Deployment sets the
 * first five; every other one has the default shown). A wrong value stops the process with a
 * message naming the variable, before anything starts.
 *
 * | variable | default |
 * |---|---|
 * | WEBSITE_GROUP | web.example.com |
 * | OPERATOR_NAMESPACE | website-system |
 * | POD_NAME | the host name |
 * | LEADER_ELECTION | false (a local run, kubebuilder's convention); the operator Deployment sets true |
 * | LEASE_NAME | website-operator |
 * | WATCH_NAMESPACE | OPERATOR_NAMESPACE; or namespaces separated by commas (`team-a,team-b`); or `*` for all namespaces |
 * | LEASE_DURATION_SECONDS, RENEW_DEADLINE_SECONDS, RETRY_PERIOD_SECONDS | 15, 10, 2 |
 * | CONCURRENCY | 32 (chosen by `npm run bench -- --operator-env CONCURRENCY=…`: see docs/measure/benchmarks.md) |
 * | KUBE_API_QPS, KUBE_API_BURST | unset: no client-side limit (the API server's Priority and Fairness governs); a QPS alone gets a burst of 1.5 × QPS |
 * | KUBE_API_HTTP2 | true: one HTTP/2 connection to the API server, health-checked by PING; false: a pool of HTTP/1.1 keep-alive connections (client-go's DISABLE_HTTP2) |
 * | RESYNC_SECONDS | 600 |
 * | KUBE_API_WATCH_LIST | true: caches are filled by streaming lists (a watch with sendInitialEvents that goes on as the cache's watch, Kubernetes 1.34 and later; a fresh process holds less: see docs/measure/benchmarks.md), falling back to pages where the API server refuses them; false: by lists in pages of 500 |
 * | WEBSITE_CAPACITY | unset: not checked; the operator Deployment sets the number of Websites its memory limit was sized for, and holding more logs a warning |
 * | CACHE_SYNC_TIMEOUT_SECONDS | 30 |
 * | CLUSTER_DOMAIN | cluster.local |
 * | WEB_IMAGE | the WebsiteWorkload default |
 * | GATEWAY_NAME | unset: no routes, `status.url` is the Service's in-cluster address; set: each Website gets an HTTPRoute attached to this Gateway (needs WEBSITE_DOMAIN) |
 * | GATEWAY_NAMESPACE | OPERATOR_NAMESPACE |
 * | GATEWAY_SECTION_NAME | unset: every listener of the Gateway that admits the routes |
 * | WEBSITE_DOMAIN | with GATEWAY_NAME: the domain of the Websites' hosts, `<name>-<namespace>.<domain>` |
 * | WEBSITE_HOST_SUFFIXES | unset: no `spec.host` allowed; suffixes separated by commas under which a Website may ask for its own host |
 * | METRICS_PORT, HEALTH_PORT | 8080, 8081 |
 * | SHUTDOWN_TIMEOUT_SECONDS | 25 |
 * | WEBHOOK_ENABLED | true: serve the conversion webhook |
 * | WEBHOOK_PORT | 9443 |
 * | WEBHOOK_CERT_MODE | operator (built-in CA in a Secret) or files (mounted by cert-manager) |
 * | WEBHOOK_CERT_DIR, WEBHOOK_SECRET_NAME, WEBHOOK_SERVICE_NAME | /etc/webhook/tls, website-operator-webhook-tls, website-operator-webhook |
 * | WEBHOOK_ADVERTISE_ADDRESS | outside a pod only: the IP address at which the API server reaches this process, which makes itself an endpoint of the webhook Service there (the CRD always calls the Service); unset: the API server's own address when it runs on this machine |
 * | LOG_LEVEL | info |
 */
export interface ProcessConfig extends OperatorConfig {
  /** Client-side rate limit; undefined: none. */
  readonly qps?: number;
  readonly burst?: number;
  /** HTTP/2 to the API server (else HTTP/1.1 keep-alive connections). */
  readonly http2: boolean;
  readonly shutdownTimeoutMs: number;
  /** Undefined: no conversion webhook in this process. */
  readonly webhook?: WebhookConfig;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ProcessConfig {
  const text = (name: string, fallback: string): string => {
    const value = env[name]?.trim();
    return value ? value : fallback;
  };
  function number(name: string, fallback: number, options?: { min?: number; integer?: boolean }): number;
  function number(name: string, fallback: undefined, options?: { min?: number; integer?: boolean }): number | undefined;
  function number(name: string, fallback: number | undefined, { min = 0, integer = true } = {}): number | undefined {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new ConfigError(
        `${name}=${JSON.stringify(raw)} is not valid: expected ${integer ? 'an integer' : 'a number'} >= ${min}`,
      );
    }
    return value;
  }
  const flag = (name: string, fallback: boolean): boolean => {
    const raw = env[name]?.trim().toLowerCase();
    if (!raw) return fallback;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`${name}=${JSON.stringify(env[name])} is not valid: expected true or false`);
  };

  function webhookConfig(): WebhookConfig {
    const port = number('WEBHOOK_PORT', OPERATOR_PORTS.webhook);
    const certMode = text('WEBHOOK_CERT_MODE', 'operator');
    if (certMode !== 'operator' && certMode !== 'files') {
      throw new ConfigError(`WEBHOOK_CERT_MODE=${JSON.stringify(certMode)} is not valid: expected operator or files`);
    }
    // In a pod the webhook Service selects the pod; a process outside makes itself the Service's
    // endpoint (webhook/local-service-endpoint.ts), so the CRD calls the Service either way.
    const inCluster = Boolean(env.KUBERNETES_SERVICE_HOST);
    const address = env.WEBHOOK_ADVERTISE_ADDRESS?.trim() || undefined;
    if (address !== undefined) {
      if (inCluster)
        throw new ConfigError(
          'WEBHOOK_ADVERTISE_ADDRESS is for an operator outside the cluster: in a pod the webhook Service selects the pod',
        );
      const problem = endpointAddressProblem(address);
      if (problem)
        throw new ConfigError(`WEBHOOK_ADVERTISE_ADDRESS=${JSON.stringify(address)} is not valid: ${problem}`);
    }
    return {
      port,
      certMode,
      certDir: text('WEBHOOK_CERT_DIR', WEBHOOK_CERT_DIR),
      secretName: text('WEBHOOK_SECRET_NAME', WEBHOOK_SECRET_NAME),
      serviceName: text('WEBHOOK_SERVICE_NAME', WEBHOOK_SERVICE_NAME),
      localEndpoint: inCluster ? undefined : { address },
    };
  }

  // operator-sdk's spelling for a list; all namespaces is `*`, since empty is the default here.
  function watchNamespaces(operatorNamespace: string): OperatorConfig['watchNamespaces'] {
    const raw = env.WATCH_NAMESPACE?.trim();
    if (!raw) return [operatorNamespace];
    if (raw === ALL_NAMESPACES) return ALL_NAMESPACES;
    const names = raw.split(',').map((name) => name.trim());
    const problem = names.includes('') ? 'an entry is empty' : watchNamespacesProblem(names);
    if (problem) {
      throw new ConfigError(
        `WATCH_NAMESPACE=${JSON.stringify(raw)} is not valid: ${problem}; expected namespace names separated by commas, or ${ALL_NAMESPACES} for all namespaces`,
      );
    }
    return names;
  }

  // The platform's Gateway, when GATEWAY_NAME names one.
  function gateway(operatorNamespace: string): WebsiteGateway | undefined {
    const name = env.GATEWAY_NAME?.trim();
    const others = ['GATEWAY_NAMESPACE', 'GATEWAY_SECTION_NAME', 'WEBSITE_DOMAIN', 'WEBSITE_HOST_SUFFIXES'];
    if (!name) {
      const stray = others.filter((variable) => env[variable]?.trim());
      if (stray.length > 0)
        throw new ConfigError(
          `${stray.join(', ')} set without GATEWAY_NAME: name the Gateway the Websites' routes attach to`,
        );
      return undefined;
    }
    const domain = env.WEBSITE_DOMAIN?.trim();
    if (!domain)
      throw new ConfigError(
        `GATEWAY_NAME=${JSON.stringify(name)} needs WEBSITE_DOMAIN: the domain under which each Website gets its host, <name>-<namespace>.<domain>`,
      );
    const suffixes = env.WEBSITE_HOST_SUFFIXES?.trim();
    const sectionName = env.GATEWAY_SECTION_NAME?.trim();
    const result: WebsiteGateway = {
      namespace: text('GATEWAY_NAMESPACE', operatorNamespace),
      name,
      ...(sectionName ? { sectionName } : {}),
      domain,
      ...(suffixes ? { hostSuffixes: suffixes.split(',').map((suffix) => suffix.trim()) } : {}),
    };
    const problems = websiteGatewayProblems(result);
    if (problems.length > 0)
      throw new ConfigError(
        `the Gateway settings are not valid: ${problems.join('; ')} (GATEWAY_NAMESPACE, GATEWAY_NAME, GATEWAY_SECTION_NAME, WEBSITE_DOMAIN, WEBSITE_HOST_SUFFIXES)`,
      );
    return result;
  }

  const operatorNamespace = text('OPERATOR_NAMESPACE', OPERATOR_NAMESPACE);
  const config: ProcessConfig = {
    group: text('WEBSITE_GROUP', DEFAULT_GROUP),
    operatorNamespace,
    watchNamespaces: watchNamespaces(operatorNamespace),
    identity: text('POD_NAME', hostname()),
    leaderElection: flag('LEADER_ELECTION', false),
    leaseName: text('LEASE_NAME', LEASE_NAME),
    leaseDurationMs: number('LEASE_DURATION_SECONDS', 15, { min: 1, integer: false }) * 1000,
    renewDeadlineMs: number('RENEW_DEADLINE_SECONDS', 10, { min: 0.1, integer: false }) * 1000,
    retryPeriodMs: number('RETRY_PERIOD_SECONDS', 2, { min: 0.1, integer: false }) * 1000,
    concurrency: number('CONCURRENCY', 32, { min: 1 }),
    qps: number('KUBE_API_QPS', undefined, { min: 0.1, integer: false }),
    burst: number('KUBE_API_BURST', undefined, { min: 1 }),
    http2: flag('KUBE_API_HTTP2', true),
    resyncMs: number('RESYNC_SECONDS', 600, { min: 1, integer: false }) * 1000,
    watchList: flag('KUBE_API_WATCH_LIST', true),
    capacity: number('WEBSITE_CAPACITY', undefined, { min: 1 }),
    cacheSyncTimeoutMs: number('CACHE_SYNC_TIMEOUT_SECONDS', 30, { min: 0, integer: false }) * 1000,
    fieldManager: MANAGED_BY,
    clusterDomain: text('CLUSTER_DOMAIN', 'cluster.local'),
    webImage: env.WEB_IMAGE?.trim() || undefined,
    gateway: gateway(operatorNamespace),
    metricsPort: number('METRICS_PORT', OPERATOR_PORTS.metrics),
    healthPort: number('HEALTH_PORT', OPERATOR_PORTS.health),
    shutdownTimeoutMs: number('SHUTDOWN_TIMEOUT_SECONDS', 25, { min: 1, integer: false }) * 1000,
    webhook: flag('WEBHOOK_ENABLED', true) ? webhookConfig() : undefined,
  };
  if (config.burst !== undefined && config.qps === undefined) {
    throw new ConfigError(
      `KUBE_API_BURST=${config.burst} needs KUBE_API_QPS: a burst is the allowance above a sustained rate`,
    );
  }
  if (
    config.leaderElection &&
    !(config.leaseDurationMs > config.renewDeadlineMs && config.renewDeadlineMs > config.retryPeriodMs)
  ) {
    throw new ConfigError(
      `leader election needs LEASE_DURATION_SECONDS > RENEW_DEADLINE_SECONDS > RETRY_PERIOD_SECONDS (got ${config.leaseDurationMs / 1000}, ${config.renewDeadlineMs / 1000}, ${config.retryPeriodMs / 1000})`,
    );
  }
  return config;
}

/**
 * Addresses an EndpointSlice may not hold (the API server's ValidateEndpointIP), by kind: a typo
 * like 127.0.0.1 is refused here with the reason instead of by the API server later.
 */
const FORBIDDEN_ENDPOINT_ADDRESSES: Array<[kind: string, ranges: Array<[network: string, prefix: number]>]> = [
  [
    'an unspecified address',
    [
      ['0.0.0.0', 32],
      ['::', 128],
    ],
  ],
  [
    'a loopback address',
    [
      ['127.0.0.0', 8],
      ['::1', 128],
    ],
  ],
  [
    'a link-local address',
    [
      ['169.254.0.0', 16],
      ['fe80::', 10],
    ],
  ],
  [
    'a link-local multicast address',
    [
      ['224.0.0.0', 24],
      ['ff02::', 16],
    ],
  ],
];

/** Why `address` cannot be an endpoint the API server dials, or undefined when it can. */
export function endpointAddressProblem(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return 'expected an IPv4 or IPv6 address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const [kind, ranges] of FORBIDDEN_ENDPOINT_ADDRESSES) {
    const list = new BlockList();
    for (const [network, prefix] of ranges) {
      if (isIP(network) === family) list.addSubnet(network, prefix, type);
    }
    if (list.check(address, type)) {
      return `it is ${kind}, which a Service endpoint may not be: use an address of this machine that the API server reaches on a network interface`;
    }
  }
  return undefined;
}
