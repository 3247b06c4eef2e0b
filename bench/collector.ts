// `npm run bench:collector`: the synthesized collector's throughput (dist/tracing-dev/tracing-dev.yaml: the
// OpenTelemetry Collector in front of Jaeger all-in-one), in spans per second sustained with
// nothing dropped, against a baseline measured in the same run: the same load sent straight to
// Jaeger's own OTLP receiver. Load comes from Jaeger's tracegen (OTLP/gRPC, the OpenTelemetry Go
// SDK), at rising worker counts; counts come from each process's own metrics.
//
//   npm run bench:collector -- [--seconds 10] [--workers 1,2,4] [--spans 10]
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sumMetric } from '../harness/process/metrics.ts';
import { builtBinaries, chartManifests, startLocalStack } from '../harness/trace/local-stack.ts';
import { npmCommand, writeResultsPage } from './report.ts';

const log = (message: string) =>
  process.stderr.write(`[bench:collector] ${new Date().toISOString().slice(11, 19)} ${message}\n`);

/** A counter's total over all label sets, named with or without `_total` (Jaeger adds it, the Collector does not). */
const counter = (text: string, name: string) => sumMetric(text, name) + sumMetric(text, `${name}_total`);

async function metrics(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

interface Counts {
  accepted: number;
  refused: number;
  sent: number;
  failed: number;
  enqueueFailed: number;
}

async function counts(port: number): Promise<Counts> {
  const text = await metrics(port);
  return {
    accepted: counter(text, 'otelcol_receiver_accepted_spans'),
    refused: counter(text, 'otelcol_receiver_refused_spans'),
    sent: counter(text, 'otelcol_exporter_sent_spans'),
    failed: counter(text, 'otelcol_exporter_send_failed_spans'),
    enqueueFailed: counter(text, 'otelcol_exporter_enqueue_failed_spans'),
  };
}

/** Runs tracegen for `seconds` with `workers`; resolves with the spans it generated (its own count). */
function tracegen(binary: string, endpoint: string, workers: number, seconds: number, spans: number): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      [
        '-workers',
        String(workers),
        '-duration',
        `${seconds}s`,
        '-spans',
        String(spans),
        '-pause',
        '0s',
        '-trace-exporter',
        'otlp-grpc',
        '-service',
        'bench',
      ],
      {
        env: {
          ...process.env,
          OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
          OTEL_BSP_MAX_QUEUE_SIZE: '100000',
          OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1024',
        },
        maxBuffer: 64 << 20,
      },
      (error, _stdout, stderr) => {
        if (error) return reject(new Error(`tracegen failed: ${stderr.split('\n').slice(-5).join('\n')}`));
        // "Worker N generated M traces": each trace is a root plus `spans` children.
        const traces = [...stderr.matchAll(/generated (\d+) traces/g)].reduce((sum, m) => sum + Number(m[1]), 0);
        resolve(traces * (spans + 1));
      },
    );
  });
}

interface Step {
  target: string;
  workers: number;
  generated: number;
  accepted: number;
  dropped: number;
  spansPerSecond: number;
}

async function measure(
  target: string,
  metricsPort: number,
  endpoint: string,
  workers: number,
  options: { seconds: number; spans: number; tracegen: string },
): Promise<Step> {
  const before = await counts(metricsPort);
  const start = performance.now();
  const generated = await tracegen(options.tracegen, endpoint, workers, options.seconds, options.spans);
  // Let batches and queues drain: done when the exporter count stops moving.
  let after = await counts(metricsPort);
  for (;;) {
    await new Promise((r) => setTimeout(r, 1500));
    const next = await counts(metricsPort);
    if (next.sent === after.sent && next.accepted === after.accepted) break;
    after = next;
  }
  const elapsed = (performance.now() - start) / 1000;
  const accepted = after.accepted - before.accepted;
  const sent = after.sent - before.sent;
  // Dropped: generated but not accepted, refused, accepted but not exported, failed or not queued.
  const dropped =
    generated -
    accepted +
    (after.refused - before.refused) +
    (accepted - sent) +
    (after.failed - before.failed) +
    (after.enqueueFailed - before.enqueueFailed);
  return { target, workers, generated, accepted, dropped, spansPerSecond: sent / elapsed };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '10' },
      workers: { type: 'string', default: '1,2,4' },
      spans: { type: 'string', default: '10' },
    },
  });
  const seconds = Number(values.seconds);
  const spans = Number(values.spans);
  const workerCounts = values.workers.split(',').map(Number);
  if (!(seconds >= 1) || !(spans >= 0) || workerCounts.some((w) => !Number.isInteger(w) || w < 1))
    throw new Error('--seconds >= 1, --spans >= 0, --workers positive whole numbers separated by commas');

  const { tracegen: tracegenBinary } = builtBinaries('tracegen');
  const stack = await startLocalStack(chartManifests('tracing-dev'), {
    dir: mkdtempSync(join(tmpdir(), 'bench-collector-')),
    only: ['jaeger', 'otel-collector'],
    order: ['jaeger'],
  });
  const steps: Step[] = [];
  try {
    const options = { seconds, spans, tracegen: tracegenBinary };
    // Jaeger alone is the baseline the collector's pipeline is measured against.
    const targets = [
      ['jaeger (baseline)', 'jaeger', 'straight to Jaeger (baseline)'],
      ['collector → jaeger', 'otel-collector', 'through the collector'],
    ] as const;
    for (const workers of workerCounts) {
      for (const [target, service, route] of targets) {
        log(`${workers} worker(s): ${route}`);
        const otlp = `http://127.0.0.1:${stack.port(service, 'otlp-grpc')}`;
        steps.push(await measure(target, stack.port(service, 'metrics'), otlp, workers, options));
      }
    }
  } finally {
    await stack.stop();
  }

  const best = (target: string) =>
    Math.max(0, ...steps.filter((s) => s.target === target && s.dropped === 0).map((s) => s.spansPerSecond));
  const collector = best('collector → jaeger');
  const baseline = best('jaeger (baseline)');
  const lines = [
    `# Collector throughput (${new Date().toISOString()})`,
    '',
    `dist/tracing-dev/tracing-dev.yaml's collector (memory_limiter, health-check filter, batch, always sample) in front of Jaeger all-in-one (memory); load: tracegen, OTLP/gRPC, ${spans + 1} spans per trace, ${seconds} s per step; ${cpus().length} CPUs shared by load, collector and Jaeger.`,
    '',
    '| target | workers | spans generated | accepted | dropped | spans/s exported |',
    '|---|---|---|---|---|---|',
    ...steps.map(
      (s) =>
        `| ${s.target} | ${s.workers} | ${s.generated} | ${s.accepted} | ${s.dropped} | ${Math.round(s.spansPerSecond)} |`,
    ),
    '',
    `Sustained with nothing dropped: collector ${Math.round(collector)} spans/s, ${baseline > 0 ? `${(collector / baseline).toFixed(2)}× of` : 'baseline'} Jaeger alone (${Math.round(baseline)} spans/s, same run).`,
    '',
  ];
  const report = lines.join('\n');
  process.stdout.write(report);
  process.stderr.write(`written to ${await writeResultsPage('collector', npmCommand('bench:collector'), report)}\n`);
}

await main();
