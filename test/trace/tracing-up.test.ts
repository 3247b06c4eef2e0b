// `npm run tracing:up` / `tracing:down` as a user runs them: the development stack from dist/ as
// processes, its endpoints in endpoints.env, traffic in, traces out, and a clean stop.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../harness/process/poll.ts';
import { hex, jaegerTrace, jaegerTraces, otlpRequest, sendOtlpJson } from '../../harness/trace/traces.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const state = mkdtempSync(join(tmpdir(), 'tracing-up-'));

function tracing(command: 'up' | 'down'): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', join(ROOT, 'scripts/tracing.ts'), command],
      { env: { ...process.env, WEBSITE_STACK_TRACING_DIR: state } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let endpoints: Record<string, string>;
let pids: Record<string, number>;

beforeAll(async () => {
  const up = await tracing('up');
  expect({ code: up.code, stderr: up.code === 0 ? '' : up.stderr }).toEqual({ code: 0, stderr: '' });
  endpoints = Object.fromEntries(
    readFileSync(join(state, 'endpoints.env'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string]),
  );
  pids = JSON.parse(readFileSync(join(state, 'pids.json'), 'utf8'));
  // What it prints is what it wrote.
  expect(up.stdout.trim()).toBe(readFileSync(join(state, 'endpoints.env'), 'utf8').trim());
}, 180_000);

afterAll(async () => {
  await tracing('down');
});

describe('npm run tracing:up', () => {
  test('writes the four endpoints', () => {
    expect(Object.keys(endpoints).sort()).toEqual([
      'COLLECTOR_OTLP_GRPC',
      'COLLECTOR_OTLP_HTTP',
      'HOTROD',
      'JAEGER_QUERY',
    ]);
    expect(endpoints.COLLECTOR_OTLP_HTTP).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.COLLECTOR_OTLP_GRPC).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  test('an application pointed at COLLECTOR_OTLP_HTTP has its traces in JAEGER_QUERY, health checks left out', async () => {
    const kept = hex(16);
    const failed = hex(16);
    const probe = hex(16);
    expect(
      await sendOtlpJson(
        endpoints.COLLECTOR_OTLP_HTTP,
        otlpRequest('my-app', [
          {
            traceId: kept,
            spans: [{ name: 'GET /orders', attributes: { 'url.path': '/orders', 'http.response.status_code': 200 } }],
          },
          { traceId: failed, spans: [{ name: 'GET /pay', error: true, durationMs: 1200 }] },
          { traceId: probe, spans: [{ name: 'GET', attributes: { 'url.path': '/healthz' } }] },
        ]),
      ),
    ).toBe(200);
    await eventually('both traces in Jaeger', async () =>
      (await jaegerTraces(endpoints.JAEGER_QUERY, 'my-app')).length === 2 ? true : undefined,
    );
    expect(await jaegerTrace(endpoints.JAEGER_QUERY, failed)).toBeDefined();
    expect(await jaegerTrace(endpoints.JAEGER_QUERY, probe)).toBeUndefined();
  });

  test('HOTROD answers /dispatch and its trace reaches Jaeger', async () => {
    expect((await fetch(`${endpoints.HOTROD}/dispatch?customer=392`)).status).toBe(200);
    await eventually('a HotROD /dispatch trace', async () =>
      (await jaegerTraces(endpoints.JAEGER_QUERY, 'frontend')).some((t) =>
        t.spans.some((s) => s.operationName === '/dispatch'),
      )
        ? true
        : undefined,
    );
  });

  test('refuses to start a second stack beside the first', async () => {
    const again = await tracing('up');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/already running: `npm run tracing:down` first/);
  });
});

describe('npm run tracing:down', () => {
  test('stops every process and removes endpoints.env', async () => {
    expect(Object.values(pids).every(alive)).toBe(true);
    expect((await tracing('down')).code).toBe(0);
    expect(Object.values(pids).filter(alive)).toEqual([]);
    expect(existsSync(join(state, 'endpoints.env'))).toBe(false);
  });
});
