import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { ConversionError, convertWebsite, DEFAULT_GROUP, OPERATOR_PORTS, WEBHOOK_PATH } from '../library.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { inRemoteContext, inSpan, type Span, SpanKind } from '../observability/tracing.ts';
import { parseCertificate, type TlsSource } from './certificates.ts';

/** The only ConversionReview version served; the CRD asks for it (`conversionReviewVersions: [v1]`). */
export const CONVERSION_REVIEW_API_VERSION = 'apiextensions.k8s.io/v1';
/** The API server's own limit on a request body: a larger ConversionReview cannot come from it. */
export const MAX_REVIEW_BYTES = 3 * 1024 * 1024;
/** The API server gives up on a webhook after at most 30 s; a request taking longer is abandoned. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long stop() lets requests in flight finish before it closes their connections. */
const SHUTDOWN_GRACE_MS = 5_000;
/**
 * Idle keep-alive connections are closed after this long (Node's default, set on purpose): a
 * connection keeps the certificate it was opened with, so after a renewal the API server's next
 * call opens a new connection, with the new certificate, within seconds.
 */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

export interface ConversionWebhookServerOptions {
  /**
   * Port to listen on; 0 picks a free one (read it from `port` after start()).
   * @default 9443
   */
  readonly port?: number;
  /**
   * Address to listen on.
   * @default '0.0.0.0'
   */
  readonly host?: string;
  /**
   * URL path of the webhook, as in the CRD's clientConfig.
   * @default '/convert'
   */
  readonly path?: string;
  /** Where the serving certificate comes from; a renewed one is served without a restart. */
  readonly tls: TlsSource;
  /**
   * Logs failed conversions and rejected requests.
   * @default no logs
   */
  readonly logger?: Logger;
  /**
   * Counts answered ConversionReviews by result (`conversion_webhook_requests_total`).
   * @default no metrics
   */
  readonly metrics?: OperatorMetrics;
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
}

interface ConversionReviewResponse {
  uid: string;
  convertedObjects?: unknown[];
  result: { status: 'Success' } | { status: 'Failed'; message: string };
}

/** A request the webhook refuses with an HTTP status, before any conversion. */
class HttpError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `namespace/name` of an object, for messages; empty when it has neither. */
function objectName(object: unknown): string {
  const metadata = isRecord(object) && isRecord(object.metadata) ? object.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : undefined;
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : undefined;
  return name ? (namespace ? `${namespace}/${name}` : name) : '';
}

/**
 * The conversion webhook: an HTTPS server the API server sends ConversionReview (v1) requests to,
 * answered with convertWebsite. Whatever arrives, it answers (a Failed result for an object it
 * cannot convert, 4xx for a request that is not a ConversionReview) and keeps running.
 */
export class ConversionWebhookServer {
  private readonly options: ConversionWebhookServerOptions;
  private readonly path: string;
  private readonly group: string;
  private server?: Server;
  private hasCertificate = false;

  constructor(options: ConversionWebhookServerOptions) {
    this.options = options;
    this.path = options.path ?? WEBHOOK_PATH;
    this.group = options.group ?? DEFAULT_GROUP;
    if (!this.path.startsWith('/')) throw new Error(`path '${this.path}' must start with '/', for example '/convert'`);
    options.tls.onChange(() => this.loadCertificate());
  }

  /** The port actually bound (useful after starting on port 0). */
  get port(): number {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error('the conversion webhook server is not listening: call start() first');
    return address.port;
  }

  /** Listening, with a certificate to serve: conversions can succeed. For the readiness probe. */
  isServing(): boolean {
    return this.server?.listening === true && this.hasCertificate;
  }

  /**
   * Starts listening; resolves once bound. Until the TLS source has a certificate, handshakes fail
   * and isServing() is false; the first certificate is picked up as soon as it arrives.
   */
  async start(): Promise<void> {
    if (this.server) throw new Error('the conversion webhook server is already started');
    // Without a certificate for now: loadCertificate() sets it, here and on every change.
    // A server span per request, the child of the API server's webhook call when it sends its
    // trace context (it does when it traces: docs/use/control-plane-tracing.md).
    // Named by its route as HTTP server spans are, or by its method alone off the route.
    const server = createServer({ minVersion: 'TLSv1.2' }, (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const method = req.method ?? 'GET';
      inRemoteContext(req.headers, () =>
        inSpan(
          path === this.path ? `${method} ${path}` : method,
          { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': path } },
          (span) => this.handle(req, res, span),
        ),
      ).catch((error: unknown) => this.internalError(res, error));
    });
    server.requestTimeout = REQUEST_TIMEOUT_MS;
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    server.headersTimeout = 10_000;
    // Failed handshakes (no certificate yet, scanners, probes speaking plain HTTP) are routine.
    server.on('tlsClientError', (error) =>
      this.options.logger?.debug({ error: error.message }, 'TLS handshake with a webhook client failed'),
    );
    this.server = server;
    this.hasCertificate = false;
    this.loadCertificate();
    const { port = OPERATOR_PORTS.webhook, host = '0.0.0.0' } = this.options;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      this.server = undefined;
      const code = (error as NodeJS.ErrnoException).code;
      const hint = code === 'EADDRINUSE' ? ': another process listens there; stop it or choose another port' : '';
      throw new Error(`the conversion webhook cannot listen on ${host}:${port} (${(error as Error).message})${hint}`);
    }
    server.on('error', (error) =>
      this.options.logger?.error({ error: error.message }, 'conversion webhook server error'),
    );
    this.options.logger?.info(
      { host, port: this.port, path: this.path, certificate: this.hasCertificate },
      'conversion webhook listening',
    );
  }

  /** Stops accepting connections, lets requests in flight finish (up to 5 s), then closes. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(force);
  }

  private loadCertificate(): void {
    const certificate = this.options.tls.current();
    if (!certificate || !this.server) return;
    try {
      this.server.setSecureContext({ cert: certificate.cert, key: certificate.key, minVersion: 'TLSv1.2' });
      this.hasCertificate = true;
      const parsed = parseCertificate(certificate.cert);
      this.options.logger?.info(
        { serialNumber: parsed?.serialNumber, notAfter: parsed?.validToDate.toISOString() },
        'conversion webhook serves a new certificate',
      );
    } catch (error) {
      // A pair the TLS stack refuses: keep serving the previous one rather than nothing.
      this.options.logger?.error(
        { error: (error as Error).message },
        'cannot use the new webhook certificate; keeping the previous one',
      );
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse, span: Span): Promise<void> {
    try {
      const pathname = (req.url ?? '/').split('?')[0];
      if (pathname !== this.path)
        throw new HttpError(404, `not found: the conversion webhook answers POST ${this.path}`);
      if (req.method !== 'POST')
        throw new HttpError(405, `method ${req.method} not allowed: send a ConversionReview with POST`, {
          allow: 'POST',
        });
      const body = await readBody(req, MAX_REVIEW_BYTES);
      let review: unknown;
      try {
        review = JSON.parse(body);
      } catch (error) {
        throw new HttpError(
          400,
          `request body is not valid JSON (${(error as Error).message}): send a ConversionReview`,
        );
      }
      const response = this.review(review, span);
      this.options.metrics?.conversions.inc({ result: response.result.status });
      span.setAttribute('website.conversion.result', response.result.status);
      if (response.result.status === 'Failed') {
        this.options.logger?.warn({ uid: response.uid, message: response.result.message }, 'conversion failed');
      }
      this.send(
        res,
        200,
        JSON.stringify({ apiVersion: CONVERSION_REVIEW_API_VERSION, kind: 'ConversionReview', response }),
        'application/json',
      );
      span.setAttribute('http.response.status_code', 200);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      span.setAttribute('http.response.status_code', error.status);
      this.options.logger?.warn(
        { status: error.status, method: req.method, url: req.url, message: error.message },
        'rejected a conversion webhook request',
      );
      if (error.status === 413) {
        // The rest of the body is not read: close the connection after answering.
        res.setHeader('connection', 'close');
      }
      this.send(res, error.status, `${error.message}\n`, 'text/plain; charset=utf-8', error.headers);
    }
  }

  /** Validates the ConversionReview and converts its objects; a bad object fails the whole review, as the API server expects. */
  private review(review: unknown, span: Span): ConversionReviewResponse {
    if (
      !isRecord(review) ||
      review.apiVersion !== CONVERSION_REVIEW_API_VERSION ||
      review.kind !== 'ConversionReview'
    ) {
      const got = isRecord(review)
        ? `apiVersion '${String(review.apiVersion)}', kind '${String(review.kind)}'`
        : 'no JSON object';
      throw new HttpError(
        400,
        `expected a ConversionReview of apiVersion ${CONVERSION_REVIEW_API_VERSION}, got ${got}: set conversionReviewVersions to ["v1"] in the CRD`,
      );
    }
    const request = review.request;
    if (!isRecord(request)) throw new HttpError(400, 'ConversionReview has no request object');
    const { uid, desiredAPIVersion, objects } = request;
    if (typeof uid !== 'string' || uid === '')
      throw new HttpError(400, 'ConversionReview request.uid must be a non-empty string');
    if (typeof desiredAPIVersion !== 'string')
      throw new HttpError(400, `ConversionReview ${uid}: request.desiredAPIVersion must be a string`);
    if (!Array.isArray(objects)) throw new HttpError(400, `ConversionReview ${uid}: request.objects must be a list`);
    span.setAttributes({
      'website.conversion.desired_api_version': desiredAPIVersion,
      'website.conversion.objects': objects.length,
    });

    const convertedObjects: unknown[] = [];
    for (const [index, object] of objects.entries()) {
      try {
        convertedObjects.push(convertWebsite(object, desiredAPIVersion, this.group));
      } catch (error) {
        const name = objectName(object);
        const which = `object ${index + 1} of ${objects.length}${name ? ` (${name})` : ''}`;
        if (!(error instanceof ConversionError)) {
          this.options.logger?.error(
            { uid, object: which, error: (error as Error).message },
            'unexpected error converting a Website',
          );
        }
        const message = `cannot convert ${which} to ${desiredAPIVersion}: ${(error as Error).message}`;
        return { uid, result: { status: 'Failed', message } };
      }
    }
    return { uid, convertedObjects, result: { status: 'Success' } };
  }

  private send(
    res: ServerResponse,
    status: number,
    body: string,
    contentType: string,
    headers: Record<string, string> = {},
  ): void {
    res.writeHead(status, { ...headers, 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }

  private internalError(res: ServerResponse, error: unknown): void {
    this.options.logger?.error({ error: (error as Error)?.message }, 'conversion webhook request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.send(
      res,
      500,
      'internal error in the conversion webhook; see the operator log\n',
      'text/plain; charset=utf-8',
    );
  }
}

/** The request body as text, refusing (413) more than `limit` bytes, whether announced or streamed. */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = () =>
    new HttpError(413, `request body exceeds ${limit} bytes, the API server's own limit for a ConversionReview`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(Buffer.concat(chunks).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}
