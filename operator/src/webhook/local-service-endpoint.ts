import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ApiError, isNotFound } from '../controller/api-error.ts';
import { isSubset } from '../controller/apply.ts';
import { backoffDelay, sleep } from '../controller/backoff.ts';
import { ENDPOINT_SLICES, type KubeApi, type KubeObject, SERVICES } from '../controller/kube-api.ts';
import { OPERATOR_NAME, operatorLabels, WEBHOOK_SERVICE_NAME, WEBHOOK_SERVICE_PORT } from '../library.ts';
import type { Logger } from '../observability/logger.ts';

/** The API calls this needs; a KubeApi has them (a narrower type keeps test doubles honest). */
export type ServiceEndpointClient = Pick<KubeApi, 'get' | 'list' | 'apply' | 'delete'>;

export interface LocalServiceEndpointOptions {
  readonly client: ServiceEndpointClient;
  /** Namespace of the webhook Service (the operator's). */
  readonly namespace: string;
  /**
   * The Service the CRD's conversion webhook calls.
   * @default 'website-operator-webhook'
   */
  readonly serviceName?: string;
  /**
   * The Service port the CRD's conversion webhook calls; the endpoint carries that port's name.
   * @default 443
   */
  readonly servicePort?: number;
  /** The port this process's webhook server listens on. */
  readonly port: number;
  /** This process's identity (POD_NAME): the EndpointSlice is named after it, so local replicas do not overwrite each other. */
  readonly identity: string;
  /**
   * The IP address at which the API server reaches this process.
   * @default the API server's own advertised address, when it is an address of this machine
   */
  readonly address?: string;
  /**
   * How often the Service and the EndpointSlice are checked again (repairs a deleted slice, notices other endpoints).
   * @default 30 seconds
   */
  readonly checkIntervalMs?: number;
  /**
   * This machine's addresses.
   * @default the addresses of its network interfaces
   */
  readonly localAddresses?: () => string[];
  readonly logger?: Logger;
}

interface EndpointSlice extends KubeObject {
  addressType?: string;
  endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }>;
  ports?: Array<{ name?: string; port?: number; protocol?: string }>;
}

interface Service extends KubeObject {
  spec?: { ports?: Array<{ name?: string; port: number }> };
}

/** The label that ties an EndpointSlice to its Service, and the one that keeps the EndpointSlice controller's hands off it. */
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
/** Retry after a failed check: 1 s, doubling, at most 5 minutes. */
const FAILURE_BACKOFF = { baseMs: 1000, maxMs: 5 * 60_000 };
/** Stopping does not wait longer than this for the API server to delete the EndpointSlice. */
const WITHDRAW_TIMEOUT_MS = 2000;

/**
 * An operator running outside the cluster (`npm run operator`) as the endpoint of its own webhook
 * Service, so that the CRD keeps calling the Service that the manifests declare and is never
 * rewritten. In a pod the Service selects the pod; a process outside has no pod, so it publishes
 * an EndpointSlice of its own for the Service (labelled so the EndpointSlice controller leaves it
 * alone) holding the address at which the API server reaches it. An API server running with
 * `--enable-aggregator-routing=true` (the local cluster's) sends webhook calls to a Service's
 * endpoints itself; in a cluster with kube-proxy on the same machine, the Service's ClusterIP leads
 * there too.
 *
 * The address: set explicitly (WEBHOOK_ADVERTISE_ADDRESS), or else the address the API server
 * advertises for itself (the `kubernetes` Service's endpoint) when it is one of this machine's: the
 * API server then runs here and reaches this process at that address. When it is not (a cluster in
 * containers or elsewhere), the API server cannot call this process at all: that is logged as an
 * error once, v1beta1 requests fail, and nothing is published. On stop the EndpointSlice is deleted.
 */
export class LocalServiceEndpoint {
  private readonly options: LocalServiceEndpointOptions;
  private readonly serviceName: string;
  private readonly sliceName: string;
  private address?: string;
  private published = false;
  /** Other endpoints of the Service last warned about, to warn once per change. */
  private others = '';

  constructor(options: LocalServiceEndpointOptions) {
    this.options = options;
    this.serviceName = options.serviceName ?? WEBHOOK_SERVICE_NAME;
    this.sliceName = endpointSliceName(this.serviceName, options.identity);
  }

  /** Publishes the endpoint, checks it every interval until `signal` aborts, then withdraws it. */
  async run(signal: AbortSignal): Promise<void> {
    const { logger, namespace } = this.options;
    // A stop does not wait for a check in flight (an API server that does not answer holds one for
    // up to the client's timeout): the withdrawal below is bounded on its own.
    const stopped = new Promise<'stopped'>((resolve) => {
      if (signal.aborted) resolve('stopped');
      signal.addEventListener('abort', () => resolve('stopped'), { once: true });
    });
    let failures = 0;
    while (!signal.aborted) {
      let delay: number;
      try {
        const published = await Promise.race([this.sync(), stopped]);
        if (published === 'stopped') break;
        if (!published) return;
        failures = 0;
        delay = this.options.checkIntervalMs ?? 30_000;
      } catch (error) {
        failures++;
        delay = backoffDelay(failures, FAILURE_BACKOFF);
        logger?.error(
          { service: `${namespace}/${this.serviceName}`, error: (error as Error).message, retryInMs: delay },
          'conversion webhook unavailable: could not make this process an endpoint of the webhook Service',
        );
      }
      await sleep(delay, signal);
    }
    await this.withdraw();
  }

  /**
   * One check: the Service exists, this process's EndpointSlice is as it should be (written when
   * not), other endpoints are reported. False when the API server cannot reach this process at all.
   */
  async sync(): Promise<boolean> {
    const { client, namespace, logger } = this.options;
    this.address ??= await this.resolveAddress();
    if (this.address === undefined) return false;
    const service = await client.get<Service>(SERVICES, { namespace, name: this.serviceName });
    if (!service) {
      throw new Error(
        `the Service ${namespace}/${this.serviceName} does not exist: the CRD's conversion webhook calls it; apply the operator's manifests (dist/website-operator/website-operator.yaml declares it)`,
      );
    }
    const servicePort = this.options.servicePort ?? WEBHOOK_SERVICE_PORT;
    const port = service.spec?.ports?.find((p) => p.port === servicePort);
    if (!port)
      throw new Error(
        `the Service ${namespace}/${this.serviceName} has no port ${servicePort}, which the CRD's conversion webhook calls`,
      );

    const desired: EndpointSlice = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: this.sliceName,
        namespace,
        labels: {
          ...operatorLabels('webhook'),
          [SERVICE_NAME_LABEL]: this.serviceName,
          [MANAGED_BY_LABEL]: OPERATOR_NAME,
        },
      },
      addressType: isIP(this.address) === 6 ? 'IPv6' : 'IPv4',
      endpoints: [{ addresses: [this.address], conditions: { ready: true } }],
      // The API server matches an endpoint's port to the Service's by name (an unnamed port by the empty name).
      ports: [{ name: port.name ?? '', port: this.options.port, protocol: 'TCP' }],
    };
    const slices = await client.list<EndpointSlice>(ENDPOINT_SLICES, namespace, {
      labelSelector: `${SERVICE_NAME_LABEL}=${this.serviceName}`,
    });
    const ours = slices.items.find((slice) => slice.metadata?.name === this.sliceName);
    // From here on a stop withdraws it, even if this write is still on its way.
    this.published = true;
    if (!ours || !isSubset(desired, ours)) {
      await client.apply(ENDPOINT_SLICES, desired, OPERATOR_NAME, { force: true });
      logger?.info(
        {
          service: `${namespace}/${this.serviceName}`,
          endpointSlice: this.sliceName,
          address: this.address,
          port: this.options.port,
        },
        'this process is an endpoint of the webhook Service: the API server calls its conversion webhook there',
      );
    }
    this.reportOtherEndpoints(slices.items.filter((slice) => slice.metadata?.name !== this.sliceName));
    return true;
  }

  /** Deletes the EndpointSlice, so the API server stops calling a process that is gone; gives up after 2 s. */
  async withdraw(): Promise<void> {
    if (!this.published) return;
    const { client, namespace, logger } = this.options;
    const context = { service: `${namespace}/${this.serviceName}`, endpointSlice: this.sliceName };
    const answered = new AbortController();
    const outcome = await Promise.race([
      client.delete(ENDPOINT_SLICES, { namespace, name: this.sliceName }).then(
        () => undefined,
        (error: unknown) => (isNotFound(error) ? undefined : (error as Error).message),
      ),
      sleep(WITHDRAW_TIMEOUT_MS, answered.signal).then(() => `no answer within ${WITHDRAW_TIMEOUT_MS} ms`),
    ]);
    answered.abort(); // no timer left behind to hold the process open
    if (outcome === undefined) {
      this.published = false;
      logger?.info(context, 'removed this process from the webhook Service endpoints');
    } else {
      logger?.warn(
        { ...context, error: outcome },
        `could not remove this process from the webhook Service endpoints: the API server calls a stopped process until it starts again or the EndpointSlice is deleted (kubectl delete endpointslice ${this.sliceName} -n ${namespace})`,
      );
    }
  }

  private async resolveAddress(): Promise<string | undefined> {
    const { client, namespace, logger } = this.options;
    if (this.options.address) return this.options.address;
    const kubernetes = await client
      .get<EndpointSlice>(ENDPOINT_SLICES, { namespace: 'default', name: 'kubernetes' })
      .catch((error: unknown) => {
        if (!(error instanceof ApiError && error.code === 403)) throw error;
        throw new Error(
          `${error.message}: finding out whether the API server runs on this machine takes reading its address (the EndpointSlice default/kubernetes); or set WEBHOOK_ADVERTISE_ADDRESS`,
        );
      });
    const advertised = kubernetes?.endpoints?.flatMap((endpoint) => endpoint.addresses) ?? [];
    const local = new Set((this.options.localAddresses ?? interfaceAddresses)());
    const address = advertised.find((candidate) => local.has(candidate));
    if (address !== undefined) return address;
    logger?.error(
      { service: `${namespace}/${this.serviceName}`, apiServer: advertised },
      `conversion webhook unavailable: the API server (advertising ${advertised.join(', ') || 'no address'}) does not run on this machine and cannot call this process through the webhook Service, so v1beta1 requests fail while v1 keeps working. Deploy the operator in the cluster, or set WEBHOOK_ADVERTISE_ADDRESS to an address of this machine that the API server can reach`,
    );
    return undefined;
  }

  private reportOtherEndpoints(slices: EndpointSlice[]): void {
    const addresses = slices
      .flatMap((slice) => slice.endpoints ?? [])
      .filter((endpoint) => endpoint.conditions?.ready !== false)
      .map((endpoint) => endpoint.addresses[0])
      .sort();
    const key = addresses.join(',');
    if (key === this.others) return;
    this.others = key;
    if (addresses.length === 0) return;
    this.options.logger?.warn(
      { service: `${this.options.namespace}/${this.serviceName}`, endpoints: addresses },
      'the webhook Service has other ready endpoints: the API server sends some conversions there. If they are not operators serving this CA (the simulated pods of the operator Deployment on a local cluster are not), scale that Deployment to 0 while the operator runs here',
    );
  }
}

/** `<service>-<identity>`, as a valid object name (identities are host names, which may hold upper case). */
export function endpointSliceName(serviceName: string, identity: string): string {
  const suffix = identity
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '');
  return `${serviceName}-${suffix || 'local'}`.slice(0, 253).replace(/[^a-z0-9]+$/, '');
}

/** This machine's addresses, as the API server writes them. */
function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map((a) => a.address));
}
