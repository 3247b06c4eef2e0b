import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { RequestOptions as HttpsRequestOptions } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, RequestContext } from '@kubernetes/client-node';
import { type Dispatcher, request } from 'undici';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { injectTraceContext, inSpan, SpanKind } from '../observability/tracing.ts';
import { ApiError, isNotFound, statusError } from './api-error.ts';
import {
  type CallOptions,
  type DeleteOptions,
  type KubeApi,
  type KubeList,
  type KubeObject,
  type ObjectRef,
  type PatchType,
  type ResourceType,
  resourcePath,
} from './kube-api.ts';
import { TokenBucket } from './rate-limiter.ts';
import { apiServerAgent, CLIENT_GO_HEALTH, type ConnectionHealth } from './transport.ts';

/**
 * A thin JSON client over client-node's authentication (kubeconfig, in-cluster token, exec and
 * OIDC plugins, client certificates), with its own watch (newline-delimited JSON read from the
 * response stream: no web streams, no readline) over the same connection pool as every request. Why not client-node's generated APIs: they
 * deserialize into class instances (dates become Date objects), so what a reconcile reads from a
 * watch and what it reads from a GET could not be compared as plain JSON; and they have no hook for
 * an optional client-side rate limit or per-verb metrics. This adds exactly those, and computes the
 * credentials once instead of per request (client-node re-reads the CA file and builds a new undici
 * Agent for every request): they are refreshed every minute, as client-go re-reads token files, and
 * the TLS connection pool is rebuilt only when the TLS material itself changed.
 */

const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  // JSON is YAML: the apply patch type takes either.
  apply: 'application/apply-patch+yaml',
};

export interface KubeClientOptions {
  /**
   * Sustained requests per second to the API server (client-side limit; watches count once, when
   * they start). Unset: no client-side limit, controller-runtime's default since v0.21, which
   * leaves fairness to the API server's Priority and Fairness.
   * @default no limit
   */
  readonly qps?: number;
  /**
   * Requests that may go out at once above the sustained rate (with `qps` only).
   * @default 1.5 × qps, rounded up (client-go's 20/30 proportion)
   */
  readonly burst?: number;
  /** Counts every request by verb, resource and code. */
  readonly metrics?: OperatorMetrics;
  /**
   * Per-request timeout (not for watches).
   * @default 30000
   */
  readonly timeoutMs?: number;
  /** User-Agent header, for the API server's audit log. */
  readonly userAgent?: string;
  /**
   * When an HTTP/2 connection counts as dead (./transport.ts); not for a cluster reached through
   * a proxy (kubeconfig proxy-url), whose connections client-node makes.
   * @default client-go's: ReadIdleTimeout 30 s, PingTimeout 15 s
   */
  readonly connectionHealth?: ConnectionHealth;
  /**
   * HTTP/2 where the API server offers it: every request and watch multiplexed on one connection.
   * False: HTTP/1.1, a keep-alive connection per request in flight and one per watch.
   * @default true
   */
  readonly http2?: boolean;
}

interface RequestOptions {
  readonly query?: Record<string, string | number | boolean | undefined>;
  readonly body?: unknown;
  readonly patchType?: PatchType;
  readonly signal?: AbortSignal;
}

/**
 * How long computed credentials are used before they are computed again: client-go re-reads a
 * token file once a minute too, and a projected ServiceAccount token is rotated well before it
 * expires. A 401 refreshes them at once.
 */
const CREDENTIALS_TTL_MS = 60_000;

/** What every request carries: the Authorization header (if any) and the TLS connection pool. */
interface Credentials {
  readonly headers: Record<string, string>;
  readonly dispatcher: Dispatcher | undefined;
  /** sha256 of the TLS material the pool was built with. */
  readonly tls: string;
  readonly at: number;
}

export class KubeClient implements KubeApi {
  private readonly limiter?: TokenBucket;
  private readonly server: string;
  private credentials?: Credentials;
  private refreshing?: Promise<Credentials>;
  private readonly options: KubeClientOptions;
  readonly kubeConfig: KubeConfig;

  constructor(kubeConfig: KubeConfig, options: KubeClientOptions = {}) {
    this.kubeConfig = kubeConfig;
    this.options = options;
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster: set KUBECONFIG or run inside a pod');
    this.server = cluster.server.replace(/\/+$/, '');
    if (options.qps !== undefined)
      this.limiter = new TokenBucket(options.qps, options.burst ?? Math.ceil(options.qps * 1.5));
    else if (options.burst !== undefined) throw new Error('a client-side burst needs a rate: set qps too');
  }

  /** In a pod: the ServiceAccount; elsewhere: $KUBECONFIG or ~/.kube/config. */
  static fromEnvironment(options?: KubeClientOptions, env: NodeJS.ProcessEnv = process.env): KubeClient {
    // With none of them, client-node would fall back to http://localhost:8080, where every request
    // fails with an error that names neither the cause nor the fix.
    if (!env.KUBERNETES_SERVICE_HOST && !env.KUBECONFIG && !existsSync(join(env.HOME ?? homedir(), '.kube', 'config')))
      throw new Error(
        'no cluster to connect to: set KUBECONFIG (for the local cluster of npm run cluster:up: export KUBECONFIG=$PWD/.cluster/kubeconfig), or run the operator in a pod',
      );
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return new KubeClient(kc, options);
  }

  async get<T extends KubeObject>(
    type: ResourceType,
    ref: ObjectRef,
    { signal }: CallOptions = {},
  ): Promise<T | undefined> {
    try {
      return await this.request<T>('GET', type, ref, { signal });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  list<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query: RequestOptions['query'] = {},
    { signal }: CallOptions = {},
  ): Promise<KubeList<T>> {
    return this.request<KubeList<T>>('GET', type, { namespace }, { query, signal });
  }

  create<T extends KubeObject>(
    type: ResourceType,
    object: T,
    { fieldManager, signal }: { fieldManager?: string } & CallOptions = {},
  ): Promise<T> {
    return this.request<T>(
      'POST',
      type,
      { namespace: object.metadata?.namespace },
      { body: object, query: { fieldManager }, signal },
    );
  }

  /** PUT: replace the object (or a subresource); metadata.resourceVersion makes it conditional. */
  update<T extends KubeObject>(
    type: ResourceType,
    object: T,
    subresource?: string,
    { signal }: CallOptions = {},
  ): Promise<T> {
    const { namespace, name } = object.metadata ?? {};
    return this.request<T>('PUT', type, { namespace, name, subresource }, { body: object, signal });
  }

  /** Server-side apply: the server merges `object` as `fieldManager`'s intent (force: take over conflicting fields). */
  apply<T extends KubeObject>(
    type: ResourceType,
    object: T,
    fieldManager: string,
    { force = true, subresource, signal }: { force?: boolean; subresource?: string } & CallOptions = {},
  ): Promise<T> {
    const { namespace, name } = object.metadata ?? {};
    return this.request<T>(
      'PATCH',
      type,
      { namespace, name, subresource },
      { body: object, patchType: 'apply', query: { fieldManager, force }, signal },
    );
  }

  patch<T extends KubeObject>(
    type: ResourceType,
    ref: ObjectRef,
    patchType: Exclude<PatchType, 'apply'>,
    body: unknown,
    fieldManager?: string,
    { signal }: CallOptions = {},
  ): Promise<T> {
    return this.request<T>('PATCH', type, ref, { body, patchType, query: { fieldManager }, signal });
  }

  async delete(type: ResourceType, ref: ObjectRef, body?: DeleteOptions, { signal }: CallOptions = {}): Promise<void> {
    await this.request('DELETE', type, ref, { body, signal });
  }

  /**
   * A watch on the connection pool every request uses: each line of the response is one event.
   * `inactivityTimeoutMs` without a byte ends it with a TimeoutError; ending it by its controller
   * gives no error.
   */
  readonly watch: KubeApi['watch'] = async (type, namespace, query, onEvent, onDone, inactivityTimeoutMs, options) => {
    await this.limiter?.take();
    this.options.metrics?.apiRequests.inc({ verb: 'WATCH', resource: type.resource, code: 200 });
    const url = new URL(this.server + resourcePath(type, { namespace }));
    url.searchParams.set('watch', 'true');
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value));
    const controller = new AbortController();
    // The caller's signal ends it also before the API server answers (a stop while it hangs).
    const stop = () => controller.abort();
    options?.signal?.addEventListener('abort', stop, { once: true });
    if (options?.signal?.aborted) controller.abort();
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, inactivityTimeoutMs).unref();
    };
    let done = false;
    // Once aborted (stopped, or timed out), what the request or the body reports is that abort.
    const finish = (error: unknown) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      options?.signal?.removeEventListener('abort', stop);
      const aborted = controller.signal.aborted;
      controller.abort();
      if (timedOut)
        onDone(
          new DOMException(`watch ${type.resource}: nothing received for ${inactivityTimeoutMs} ms`, 'TimeoutError'),
        );
      else onDone(aborted ? null : error);
    };
    try {
      const credentials = await this.currentCredentials();
      const headers: Record<string, string> = { ...credentials.headers, accept: 'application/json' };
      if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
      idle();
      // undici ends a request by its signal only once it has a connection: a stop, or the
      // inactivity timer, while the API server never answers the handshake must end it too.
      const response = await untilAborted(
        request(url, { method: 'GET', headers, dispatcher: credentials.dispatcher, signal: controller.signal }),
        controller.signal,
      );
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        if (response.statusCode === 401 && this.credentials === credentials) this.credentials = undefined;
        throw statusError(response.statusCode, text, `watch ${type.resource}`);
      }
      idle();
      const body = response.body;
      body.setEncoding('utf8');
      let partial = '';
      body.on('data', (chunk: string) => {
        idle();
        partial += chunk;
        for (let newline = partial.indexOf('\n'); newline >= 0 && !done; newline = partial.indexOf('\n')) {
          const line = partial.slice(0, newline);
          partial = partial.slice(newline + 1);
          if (!line.trim()) continue;
          let event: { type: string; object: KubeObject };
          try {
            event = JSON.parse(line);
          } catch {
            finish(new Error(`watch ${type.resource}: a line that is not JSON (${line.slice(0, 80)})`));
            return;
          }
          onEvent(event.type, event.object);
        }
      });
      body.on('error', finish);
      body.on('end', () => finish(null));
      body.on('close', () => finish(null));
    } catch (error) {
      finish(error);
    }
    return controller;
  };

  async request<T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    type: ResourceType,
    ref: ObjectRef,
    options: RequestOptions = {},
  ): Promise<T> {
    const path = resourcePath(type, ref);
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const verb = metricVerb(method, ref, options.patchType);
    // A client span per request (OpenTelemetry's HTTP client conventions); its traceparent goes along.
    const attributes = {
      'http.request.method': method,
      'url.full': url.toString(),
      'server.address': url.hostname,
      'k8s.resource': type.resource,
      ...(ref.namespace ? { 'k8s.namespace.name': ref.namespace } : {}),
    };
    return inSpan(`${verb} ${type.resource}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const started = performance.now();
      await this.limiter?.take();

      const credentials = await this.currentCredentials();
      const headers: Record<string, string> = { ...credentials.headers, accept: 'application/json' };
      if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
      if (options.body !== undefined)
        headers['content-type'] = options.patchType ? PATCH_CONTENT_TYPE[options.patchType] : 'application/json';
      injectTraceContext(headers);
      const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 30_000);

      let code = 0;
      try {
        // undici's request, not fetch: fetch wraps every body in WHATWG streams and Request and
        // Response objects, which took a fifth of the operator's CPU in a burst (npm run bench:profile).
        const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
        const response = await untilAborted(
          request(url, {
            method,
            headers,
            body: options.body === undefined ? undefined : JSON.stringify(options.body),
            dispatcher: credentials.dispatcher,
            signal,
          }),
          signal,
        );
        code = response.statusCode;
        span.setAttribute('http.response.status_code', code);
        // Rotated or expired credentials: compute them again for the next request (the work
        // queue retries this one).
        if (code === 401 && this.credentials === credentials) this.credentials = undefined;
        const text = await response.body.text();
        if (code < 200 || code > 299) throw statusError(code, text, `${verb} ${path}`);
        return (text ? JSON.parse(text) : undefined) as T;
      } catch (error) {
        if (error instanceof ApiError) throw error;
        // No answer in time, by the request timeout or by the caller's deadline (a Lease renewal's):
        // the connection may be dead without a close, so the next request takes a new one rather
        // than waiting for the HTTP/2 health check's 45 s. A caller's abort for another reason
        // (shutdown) says nothing of the connection.
        const deadline =
          options.signal?.aborted && (options.signal.reason as Error | undefined)?.name === 'TimeoutError';
        if (timeout.aborted || deadline) this.replacePool(credentials);
        // No response: connection refused, TLS failure, timeout. Say which request, not the headers.
        throw new ApiError(
          0,
          'ConnectionError',
          `${verb} ${path}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`,
        );
      } finally {
        this.options.metrics?.apiRequests.inc({ verb, resource: type.resource, code });
        this.options.metrics?.apiLatency.observe(
          { verb, resource: type.resource },
          (performance.now() - started) / 1000,
        );
      }
    });
  }

  /**
   * After a request timed out, the next one starts on a new connection pool; the old pool is
   * destroyed once the requests in flight on it have had their time. The connection may have died
   * without a close (a dropped NAT entry, a partitioned node): over HTTP/2, which undici negotiates
   * with the API server, every request shares that one connection, and undici replaces it only when
   * its own 300 s timeouts fire, which the timeout here always preempts, so every later request
   * would time out on it too, forever (client-go pings its HTTP/2 connections for the same reason).
   */
  private replacePool(credentials: Credentials): void {
    if (this.credentials !== credentials) return;
    this.credentials = undefined;
    const old = credentials.dispatcher;
    if (old) setTimeout(() => void old.destroy(), this.options.timeoutMs ?? 30_000).unref();
  }

  /** The credentials of the last CREDENTIALS_TTL_MS; one refresh at a time when they are older. */
  private currentCredentials(): Promise<Credentials> | Credentials {
    const current = this.credentials;
    if (current && Date.now() - current.at < CREDENTIALS_TTL_MS) return current;
    this.refreshing ??= this.refreshCredentials(current).finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /**
   * Computes the headers through client-node's authenticators (token files, exec and OIDC plugins
   * cache and refresh their own tokens), and keeps the connection pool unless the TLS material
   * (CA, client certificate and key) changed: a rotated client certificate gets a new pool.
   */
  private async refreshCredentials(previous: Credentials | undefined): Promise<Credentials> {
    const options: HttpsRequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options);
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(options.headers ?? {}))
      if (value !== undefined) headers[key.toLowerCase()] = String(value);
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const fingerprint = createHash('sha256');
    for (const part of [
      options.ca,
      options.cert,
      options.key,
      options.pfx,
      options.passphrase,
      String(options.rejectUnauthorized),
      options.servername,
    ]) {
      fingerprint.update(Buffer.isBuffer(part) ? part : String(part ?? '')).update('\0');
    }
    const tls = fingerprint.digest('hex');
    let dispatcher = previous?.dispatcher;
    if (!previous || previous.tls !== tls) {
      if (this.kubeConfig.getCurrentCluster()?.proxyUrl) {
        // Through a proxy: client-node's pool, which knows HTTP, HTTPS and SOCKS proxies.
        const context = new RequestContext(this.server, 'GET');
        await this.kubeConfig.applySecurityAuthentication(context);
        dispatcher = context.getDispatcher() as Dispatcher | undefined;
      } else {
        const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = options;
        dispatcher = apiServerAgent(
          { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername },
          this.options.connectionHealth ?? CLIENT_GO_HEALTH,
          () => this.options.metrics?.deadConnections.inc(),
          this.options.http2 ?? true,
        );
      }
      // Let requests in flight on the old pool finish.
      const old = previous?.dispatcher;
      if (old) setTimeout(() => void old.close(), 60_000).unref();
    }
    this.credentials = { headers, dispatcher, tls, at: Date.now() };
    return this.credentials;
  }
}

/**
 * `pending`, or a rejection with the signal's reason as soon as it aborts. undici's request applies
 * an abort only once its connection is up, so against a server that accepts connections and never
 * completes one, the caller would wait for the connect timeout (and shutdown with it). A response
 * that arrives after the abort is read to the end and dropped.
 */
function untilAborted<T extends { body: { dump(): Promise<void> } }>(
  pending: Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const abort = () => {
      reject(signal.reason);
      pending.then(
        (late) => late.body.dump(),
        () => undefined,
      );
    };
    if (signal.aborted) return abort();
    signal.addEventListener('abort', abort, { once: true });
    pending.then(
      (response) => {
        signal.removeEventListener('abort', abort);
        resolve(response);
      },
      (error) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

function metricVerb(method: string, ref: ObjectRef, patchType?: PatchType): string {
  if (method === 'GET') return ref.name ? 'GET' : 'LIST';
  if (method === 'POST') return 'CREATE';
  if (method === 'PUT') return 'UPDATE';
  if (method === 'PATCH') return patchType === 'apply' ? 'APPLY' : 'PATCH';
  return method;
}
