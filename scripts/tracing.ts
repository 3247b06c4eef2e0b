// `npm run tracing:up` / `npm run tracing:down`: the development trace stack (dist/tracing-dev/tracing-dev.yaml:
// Jaeger all-in-one, the OpenTelemetry Collector, HotROD) as local processes, with exactly the
// synthesized configuration (harness/trace/local-stack.ts). Endpoints go to .tracing/endpoints.env.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive, stopProcesses } from '../harness/process/processes.ts';
import { chartManifests, startLocalStack } from '../harness/trace/local-stack.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where pids, logs, localized configs and endpoints.env go (the tests point it elsewhere). */
const STATE = process.env.WEBSITE_STACK_TRACING_DIR ?? join(ROOT, '.tracing');
const PIDS = join(STATE, 'pids.json');

/** Standard ports when they are free, so the usual URLs work; others otherwise. */
const PREFERRED_PORTS = {
  'otel-collector/otlp-grpc': 4317,
  'otel-collector/otlp-http': 4318,
  'jaeger/query': 16686,
  'hotrod/frontend': 8080,
};

const log = (message: string) => process.stderr.write(`[tracing] ${message}\n`);

async function down(): Promise<void> {
  if (!existsSync(PIDS)) {
    log(`not running (no ${PIDS})`);
    return;
  }
  const pids: Record<string, number> = JSON.parse(readFileSync(PIDS, 'utf8'));
  await stopProcesses(pids);
  for (const [name, pid] of Object.entries(pids)) log(`stopped ${name} (pid ${pid})`);
  rmSync(PIDS);
  rmSync(join(STATE, 'endpoints.env'), { force: true });
}

async function up(): Promise<void> {
  if (existsSync(PIDS)) {
    const pids: Record<string, number> = JSON.parse(readFileSync(PIDS, 'utf8'));
    if (Object.values(pids).some(alive))
      throw new Error('the trace stack is already running: `npm run tracing:down` first');
  }
  rmSync(join(STATE, 'run'), { recursive: true, force: true });
  mkdirSync(STATE, { recursive: true });
  // Backends before the collector before HotROD, so no span is sent to nobody; a failed start stops the others.
  const stack = await startLocalStack(chartManifests('tracing-dev'), {
    dir: join(STATE, 'run'),
    logDir: join(STATE, 'logs'),
    preferredPorts: PREFERRED_PORTS,
    order: ['jaeger', 'otel-collector', 'hotrod'],
    detached: true,
  });
  const pids = Object.fromEntries(stack.running.map((r) => [r.pod.name, r.process.pid!]));
  writeFileSync(PIDS, `${JSON.stringify(pids, null, 2)}\n`);
  for (const r of stack.running) log(`${r.pod.name} is up (pid ${r.process.pid}, log ${r.logFile})`);
  const endpoints = {
    COLLECTOR_OTLP_HTTP: stack.url('otel-collector', 'otlp-http'),
    COLLECTOR_OTLP_GRPC: `127.0.0.1:${stack.port('otel-collector', 'otlp-grpc')}`,
    JAEGER_QUERY: stack.url('jaeger', 'query'),
    HOTROD: stack.url('hotrod', 'frontend'),
  };
  const text = Object.entries(endpoints)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  writeFileSync(join(STATE, 'endpoints.env'), `${text}\n`);
  process.stdout.write(`${text}\n`);
  log(
    `written to ${join(STATE, 'endpoints.env')}; point an application at it with OTEL_EXPORTER_OTLP_ENDPOINT=${endpoints.COLLECTOR_OTLP_HTTP}`,
  );
}

const command = process.argv[2];
if (command === 'up') await up();
else if (command === 'down') await down();
else {
  process.stderr.write('usage: node scripts/tracing.ts up|down\n');
  process.exit(2);
}
