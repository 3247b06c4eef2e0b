import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorMetrics } from './metrics.ts';

/**
 * The operator's plain-HTTP endpoints: Prometheus metrics (`GET /metrics`) on one port, and the
 * kubelet's probes on another (`/healthz`: the process serves requests; `/readyz`: the caches
 * are synced and, when configured, the conversion webhook serves). Separate ports, so a
 * NetworkPolicy can open metrics to Prometheus without exposing anything else.
 */

export interface Check {
  readonly name: string;
  readonly ok: () => boolean;
}

/** A plain-HTTP server on a port of its own (0 picks a free one, which `port` then tells). */
class EndpointServer {
  private readonly server: Server;
  private boundPort = 0;

  constructor(handler: (req: IncomingMessage, res: ServerResponse) => void) {
    this.server = createServer(handler);
  }

  get port(): number {
    return this.boundPort;
  }

  async start(port: number, host = '0.0.0.0'): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.boundPort = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export class MetricsServer extends EndpointServer {
  constructor(metrics: OperatorMetrics) {
    super((req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics') {
        res.writeHead(404).end('not found: metrics are at GET /metrics\n');
        return;
      }
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (error: Error) => res.writeHead(500).end(`${error.message}\n`),
      );
    });
  }
}

export class HealthServer extends EndpointServer {
  constructor(readiness: Check[]) {
    super((req, res) => {
      if (req.method !== 'GET') {
        res.writeHead(405).end();
      } else if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (req.url === '/readyz') {
        const failing = readiness.filter((check) => !check.ok()).map((check) => check.name);
        if (failing.length === 0) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
        else res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready: ${failing.join(', ')}\n`);
      } else {
        res.writeHead(404).end('not found: probes are /healthz and /readyz\n');
      }
    });
  }
}
