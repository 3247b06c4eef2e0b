// A real Gateway for the tests that route Websites: the Gateway API's standard-channel CRDs (from
// its Go module), and Traefik (upstream's release binary, scripts/binaries.sh traefik) as the
// Gateway implementation, run as a local process with the cluster's kubeconfig, as a Gateway
// controller outside the cluster would. Its Kubernetes Gateway provider watches GatewayClasses,
// Gateways and HTTPRoutes, writes their status, and proxies each route's host to the Service's
// endpoints: the pods' addresses, which the host reaches on a cluster with a real node.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterAccess } from '../cluster/kubectl.ts';
import { kubectlOk } from '../cluster/kubectl.ts';
import { awaitHealthy, type LoggedProcess, spawnLogged } from '../process/logged.ts';
import { freePort } from '../process/ports.ts';
import { builtBinaries } from '../trace/local-stack.ts';

/** The Gateway API release whose CRDs the tests install (HTTPRoute v1 served and stored). */
export const GATEWAY_API_VERSION = 'v1.6.3';
/** Traefik's controllerName: the GatewayClass that names it is Traefik's. */
export const TRAEFIK_CONTROLLER = 'traefik.io/gateway-controller';

/** The standard channel's CRD files, from the module `sigs.k8s.io/gateway-api` in the Go module cache. */
export function gatewayApiCrdFiles(): string[] {
  const module = JSON.parse(
    execFileSync('go', ['mod', 'download', '-json', `sigs.k8s.io/gateway-api@${GATEWAY_API_VERSION}`], {
      cwd: '/',
      encoding: 'utf8',
    }),
  ) as { Dir: string };
  const dir = join(module.Dir, 'config/crd/standard');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .map((file) => join(dir, file));
}

/** Installs the Gateway API CRDs (server-side, as an update would) and waits until they are served. */
export async function installGatewayApi(cluster: ClusterAccess): Promise<void> {
  const files = gatewayApiCrdFiles();
  await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', ...files.flatMap((file) => ['-f', file])]);
  await kubectlOk(cluster, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/gatewayclasses.gateway.networking.k8s.io',
    'crd/gateways.gateway.networking.k8s.io',
    'crd/httproutes.gateway.networking.k8s.io',
  ]);
}

/**
 * A GatewayClass for Traefik and a Gateway `namespace/name` with an HTTP listener `web` on `port`
 * and, with `https`, an HTTPS listener `websecure` on its port terminating TLS with the Secret it
 * names (in the Gateway's namespace), each admitting routes from the namespaces labelled
 * `routesLabel` (all namespaces when undefined).
 */
export function gatewayManifests(options: {
  readonly className: string;
  readonly namespace: string;
  readonly name: string;
  readonly port: number;
  readonly https?: { readonly port: number; readonly secretName: string };
  readonly routesLabel?: Readonly<Record<string, string>>;
}): object[] {
  const allowedRoutes = {
    namespaces: options.routesLabel
      ? { from: 'Selector', selector: { matchLabels: options.routesLabel } }
      : { from: 'All' },
  };
  return [
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: options.className },
      spec: { controllerName: TRAEFIK_CONTROLLER },
    },
    {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: options.name, namespace: options.namespace },
      spec: {
        gatewayClassName: options.className,
        listeners: [
          { name: 'web', protocol: 'HTTP', port: options.port, allowedRoutes },
          ...(options.https
            ? [
                {
                  name: 'websecure',
                  protocol: 'HTTPS',
                  port: options.https.port,
                  tls: { mode: 'Terminate', certificateRefs: [{ kind: 'Secret', name: options.https.secretName }] },
                  allowedRoutes,
                },
              ]
            : []),
        ],
      },
    },
  ];
}

export interface Traefik extends LoggedProcess {
  /** The port of its `web` entry point: a Gateway listener on this port is served there. */
  readonly webPort: number;
  /** The port of its `websecure` entry point, for an HTTPS listener. */
  readonly websecurePort: number;
}

/**
 * Starts Traefik as the cluster's Gateway controller: its Kubernetes Gateway provider with the
 * kubeconfig, `web` and `websecure` entry points on free ports of 127.0.0.1 (which a Gateway
 * listener of that port maps to) and its ping endpoint on another; resolves once it answers its
 * ping. Gateways it programs report 127.0.0.1 as their address.
 */
export async function startTraefik(kubeconfig: string, logDir: string): Promise<Traefik> {
  const { traefik } = builtBinaries('traefik');
  const webPort = await freePort();
  const websecurePort = await freePort();
  const pingPort = await freePort();
  const running = spawnLogged(
    'traefik',
    traefik,
    [
      '--providers.kubernetesgateway=true',
      '--providers.kubernetesgateway.statusaddress.ip=127.0.0.1',
      `--entrypoints.web.address=127.0.0.1:${webPort}`,
      `--entrypoints.websecure.address=127.0.0.1:${websecurePort}`,
      `--entrypoints.traefik.address=127.0.0.1:${pingPort}`,
      '--ping=true',
      // No calls home: no release check, no usage statistics.
      '--global.checknewversion=false',
      '--global.sendanonymoususage=false',
      '--log.level=INFO',
    ],
    {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig },
      logFile: join(logDir, 'traefik.log'),
    },
  );
  try {
    await awaitHealthy(running, `http://127.0.0.1:${pingPort}/ping`);
  } catch (error) {
    await running.stop();
    throw error;
  }
  return { ...running, webPort, websecurePort };
}
