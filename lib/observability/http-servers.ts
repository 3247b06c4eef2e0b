import { type Server, createServer } from 'node:http';
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

async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

export class MetricsServer {
  private readonly server: Server;
  private boundPort = 0;

  constructor(metrics: OperatorMetrics) {
    this.server = createServer((req, res) => {
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

  get port(): number {
    return this.boundPort;
  }

  async start(port: number, host = '0.0.0.0'): Promise<void> {
    this.boundPort = await listen(this.server, port, host);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export class HealthServer {
  private readonly server: Server;
  private boundPort = 0;

  constructor(readiness: Check[]) {
    this.server = createServer((req, res) => {
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

  get port(): number {
    return this.boundPort;
  }

  async start(port: number, host = '0.0.0.0'): Promise<void> {
    this.boundPort = await listen(this.server, port, host);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
