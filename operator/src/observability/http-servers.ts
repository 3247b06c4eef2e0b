import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OperatorMetrics } from './metrics.ts';

/**
 * The operator's plain-HTTP endpoints: Prometheus metrics (`GET /metrics`) on one port, and the
 * kubelet's probes on another (`/healthz`: the process serves requests; `/readyz`: the caches
 * are synced and, when configured, the conversion webhook serves). Separate ports, so a
 * NetworkPolicy can open metrics to Prometheus without exposing anything else.
 *
 * `/readyz` lists every check with its state, as the API server's `/readyz?verbose` does
 * (`[+]caches ok`, `[-]webhook failed`), each with a detail when it has one, then
 * `readyz check passed` (200) or `readyz check failed` (503).
 */

export interface Check {
  readonly name: string;
  readonly ok: () => boolean;
  /** What a person reading /readyz should know about this check (shown in either state). */
  readonly detail?: () => string | undefined;
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
      } else if (req.url === '/readyz' || req.url?.startsWith('/readyz?')) {
        let ready = true;
        const lines = readiness.map((check) => {
          const ok = check.ok();
          ready &&= ok;
          const detail = check.detail?.();
          return `[${ok ? '+' : '-'}]${check.name} ${ok ? 'ok' : 'failed'}${detail ? `: ${detail}` : ''}`;
        });
        lines.push(`readyz check ${ready ? 'passed' : 'failed'}`);
        res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(`${lines.join('\n')}\n`);
      } else {
        res.writeHead(404).end('not found: probes are /healthz and /readyz\n');
      }
    });
  }
}
