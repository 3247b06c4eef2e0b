// Jaeger v2 (the real binary) storing traces in a real Cassandra: one OTLP/HTTP trace in, the
// same trace out of the query API, also from a Jaeger started afterwards (so it came from Cassandra).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/operator-process.ts';
import { type Cassandra, startCassandra } from './cassandra.ts';

const BINARIES = fileURLToPath(new URL('../../scripts/binaries.sh', import.meta.url));
const PASSWORD = 'cassandra';

/** The Jaeger binary scripts/binaries.sh builds (or TEST_ASSET_JAEGER). */
function jaegerBinary(): string {
  const out = execFileSync('bash', [BINARIES, 'jaeger'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return /^jaeger=(.+)$/m.exec(out)![1];
}

interface Ports {
  otlpGrpc: number;
  otlpHttp: number;
  queryHttp: number;
  queryGrpc: number;
  health: number;
  metrics: number;
}

async function freePorts(): Promise<Ports> {
  return {
    otlpGrpc: await freePort(),
    otlpHttp: await freePort(),
    queryHttp: await freePort(),
    queryGrpc: await freePort(),
    health: await freePort(),
    metrics: await freePort(),
  };
}

/** A Jaeger v2 configuration with Cassandra storage; every listener on 127.0.0.1 at `ports`. */
function jaegerConfig(contactPoint: string, ports: Ports): string {
  return JSON.stringify({
    service: {
      extensions: ['jaeger_storage', 'jaeger_query', 'healthcheckv2'],
      pipelines: { traces: { receivers: ['otlp'], processors: ['batch'], exporters: ['jaeger_storage_exporter'] } },
      telemetry: {
        resource: { 'service.name': 'jaeger' },
        metrics: { level: 'basic', readers: [{ pull: { exporter: { prometheus: { host: '127.0.0.1', port: ports.metrics } } } }] },
        logs: { level: 'info' },
      },
    },
    extensions: {
      healthcheckv2: { use_v2: true, http: { endpoint: `127.0.0.1:${ports.health}` } },
      jaeger_query: {
        storage: { traces: 'main' },
        http: { endpoint: `127.0.0.1:${ports.queryHttp}` },
        grpc: { endpoint: `127.0.0.1:${ports.queryGrpc}` },
      },
      jaeger_storage: {
        backends: {
          main: {
            cassandra: {
              schema: { keyspace: 'jaeger_v1_dc1', create: true, trace_ttl: '168h' },
              connection: {
                servers: [contactPoint],
                auth: { basic: { username: 'cassandra', password: '${env:CASSANDRA_PASSWORD}' } },
                tls: { insecure: true },
              },
            },
          },
        },
      },
    },
    receivers: {
      otlp: { protocols: { grpc: { endpoint: `127.0.0.1:${ports.otlpGrpc}` }, http: { endpoint: `127.0.0.1:${ports.otlpHttp}` } } },
    },
    processors: { batch: {} },
    exporters: { jaeger_storage_exporter: { trace_storage: 'main' } },
  });
}

interface Jaeger {
  readonly ports: Ports;
  /** Everything it printed so far. */
  output(): string;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/status`)).status === 200;
  } catch {
    return false;
  }
}

/** Spawns Jaeger on `contactPoint`. Resolves with the process as soon as it is spawned. */
async function spawnJaeger(binary: string, dir: string, contactPoint: string, password: string): Promise<{ child: ChildProcess; jaeger: Jaeger; exited: Promise<number | null> }> {
  const ports = await freePorts();
  const config = join(dir, `jaeger-${ports.otlpHttp}.json`);
  writeFileSync(config, jaegerConfig(contactPoint, ports));
  const child = spawn(binary, ['--config', `file:${config}`], { env: { ...process.env, CASSANDRA_PASSWORD: password }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const jaeger: Jaeger = {
    ports,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
  return { child, jaeger, exited };
}

/** Starts Jaeger and waits until its health check reports every component ready. */
async function startJaeger(binary: string, dir: string, contactPoint: string): Promise<Jaeger> {
  const { child, jaeger } = await spawnJaeger(binary, dir, contactPoint, PASSWORD);
  const deadline = Date.now() + 120_000;
  while (!(await healthy(jaeger.ports.health))) {
    if (child.exitCode !== null) throw new Error(`jaeger exited (${child.exitCode}) during startup:\n${jaeger.output()}`);
    if (Date.now() > deadline) {
      await jaeger.stop();
      throw new Error(`jaeger was not healthy within 120 s:\n${jaeger.output()}`);
    }
    await sleep(200);
  }
  return jaeger;
}

/** One server span of service `service`, as OTLP/HTTP JSON. */
function otlpTrace(traceId: string, spanId: string, service: string): unknown {
  const now = BigInt(Date.now()) * 1_000_000n;
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [
          {
            scope: { name: 'website-stack-test' },
            spans: [
              {
                traceId,
                spanId,
                name: 'GET /',
                kind: 2,
                startTimeUnixNano: String(now - 5_000_000n),
                endTimeUnixNano: String(now),
                attributes: [{ key: 'http.response.status_code', value: { intValue: '200' } }],
              },
            ],
          },
        ],
      },
    ],
  };
}

/** The trace from Jaeger's query API; polls while it is not found (the exporter writes asynchronously). */
async function queryTrace(port: number, traceId: string): Promise<any> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`http://127.0.0.1:${port}/api/traces/${traceId}`);
    const body = await response.json();
    if (response.status === 200 || Date.now() > deadline) return { status: response.status, body };
    await sleep(250);
  }
}

describe('Jaeger v2 with Cassandra storage', () => {
  let dir: string;
  let cassandra: Cassandra | undefined;
  let jaegerBin: string;
  const running: Jaeger[] = [];

  // Built from its Go module on a machine's first run: minutes, once.
  beforeAll(() => {
    jaegerBin = jaegerBinary();
  }, 1_800_000);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'trace-cassandra-'));
    const start = Date.now();
    cassandra = await startCassandra(join(dir, 'cassandra'));
    console.log(`[trace] Cassandra accepts logins on ${cassandra.contactPoint} (${((Date.now() - start) / 1000).toFixed(1)} s)`);
  }, 300_000);

  afterAll(async () => {
    for (const jaeger of running) await jaeger.stop();
    await cassandra?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  test('stores an OTLP/HTTP trace in Cassandra and serves it from the query API, also after a restart', async () => {
    let start = Date.now();
    const first = await startJaeger(jaegerBin, dir, cassandra!.contactPoint);
    running.push(first);
    console.log(`[trace] Jaeger created its schema and is healthy (${((Date.now() - start) / 1000).toFixed(1)} s)`);

    const traceId = randomBytes(16).toString('hex');
    const spanId = randomBytes(8).toString('hex');
    const sent = await fetch(`http://127.0.0.1:${first.ports.otlpHttp}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(otlpTrace(traceId, spanId, 'cassandra-probe')),
    });
    expect(sent.status).toBe(200);

    const expectTrace = (result: any) => {
      expect(result.status).toBe(200);
      const [trace] = result.body.data;
      expect(trace.traceID).toBe(traceId);
      expect(trace.spans).toHaveLength(1);
      const [span] = trace.spans;
      expect(span).toMatchObject({ traceID: traceId, spanID: spanId, operationName: 'GET /', duration: 5000 });
      expect(trace.processes[span.processID].serviceName).toBe('cassandra-probe');
      expect(span.tags).toEqual(expect.arrayContaining([{ key: 'http.response.status_code', type: 'int64', value: 200 }]));
    };
    expectTrace(await queryTrace(first.ports.queryHttp, traceId));

    // A new Jaeger has nothing in memory: what it returns was read from Cassandra.
    await first.stop();
    start = Date.now();
    const second = await startJaeger(jaegerBin, dir, cassandra!.contactPoint);
    running.push(second);
    console.log(`[trace] Jaeger on the existing schema is healthy (${((Date.now() - start) / 1000).toFixed(1)} s)`);
    expectTrace(await queryTrace(second.ports.queryHttp, traceId));
  }, 300_000);

  test('Cassandra refuses a wrong password, and Jaeger does not start', async () => {
    const { jaeger, exited } = await spawnJaeger(jaegerBin, dir, cassandra!.contactPoint, 'not-the-password');
    running.push(jaeger);
    expect(await exited).not.toBe(0);
    expect(jaeger.output()).toMatch(/Provided username cassandra and\/or password are incorrect/);
  }, 120_000);
});
