// `npm run bench:profile`: where the operator's CPU and memory go, before anything is cut. The
// bundle as the image runs it (bench/operator.ts, dist/'s NODE_OPTIONS), on the bench cluster,
// through a burst of N Websites (default 1000, 8 creates in flight, as `npm run bench`): a CPU
// profile of the burst, and sampling heap profiles of what is live idle and holding N, both from
// V8's profilers over the inspector (started paused, so that module loading is in the heap profile).
// Prints the top functions and packages, writes docs/measure/results/profile.md, and the raw
// profiles to test-results/profile/ (.cpuprofile and .heapprofile open in Chrome DevTools). First,
// off the cluster, what each package the bundle loads adds to its idle RSS (bench/module-rss.ts).
//
//   npm run bench:profile -- [--n 1000] [--keep-cluster]
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { steadyRss } from '../harness/process/proc.ts';
import { DEPLOYMENTS, SERVICES } from '../operator/src/controller/kube-api.ts';
import { CLUSTER_ARGS, clusterUp, describeMachine, emptyNamespace, holdCluster, ROOT } from './cluster.ts';
import { Inspector } from './inspector.ts';
import { idleRssByModule } from './module-rss.ts';
import { websiteOperatorPeer } from './operator.ts';
import { createAll } from './phases/burst.ts';
import { startPeer, stopPeers, watchWebsites } from './phases/peer-process.ts';
import { names } from './phases/plan.ts';
import {
  type CpuProfile,
  cpuSelfTime,
  type HeapNode,
  heapByPackage,
  moduleStarts,
  rowsTable,
} from './profile-summary.ts';

const log = (message: string) => console.error(`[profile] ${message}`);
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** Every chunk of the bundle, by the file URL V8's profiles name it with, and where its modules start. */
async function bundleChunks(): Promise<Map<string, Array<{ line: number; path: string }>>> {
  const dir = join(ROOT, 'operator/build');
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.mjs'));
  const chunks = new Map<string, Array<{ line: number; path: string }>>();
  for (const file of files)
    chunks.set(pathToFileURL(join(dir, file)).href, moduleStarts(await readFile(join(dir, file), 'utf8')));
  return chunks;
}

/** Milliseconds to JSON.parse every line, warm: the median of 5 rounds. */
function decodeTime(lines: readonly string[]): number {
  let sink = 0;
  const round = () => {
    const start = performance.now();
    for (const line of lines) sink += (JSON.parse(line) as { type: string }).type.length;
    return performance.now() - start;
  };
  round();
  const rounds = Array.from({ length: 5 }, round).sort((a, b) => a - b);
  if (sink === 0 && lines.length > 0) throw new Error('nothing was decoded');
  return rounds[2];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { n: { type: 'string', default: '1000' }, 'keep-cluster': { type: 'boolean', default: false } },
  });
  const n = Number(values.n);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--n takes a positive whole number, got ${JSON.stringify(values.n)}`);
  const out = join(ROOT, 'test-results/profile');
  await mkdir(out, { recursive: true });
  log('idle RSS by package: each bundled alone, and all but one');
  const modules = await idleRssByModule(join(out, 'modules'));

  let inspector: Inspector | undefined;
  const peer = websiteOperatorPeer({
    inspect: async (port) => {
      inspector = await Inspector.connect(port, 30_000);
      // Every 4 KiB allocated, a sample with its stack; kept while the object lives.
      await inspector.send('HeapProfiler.startSampling', { samplingInterval: 4096 });
      await inspector.send('Profiler.enable');
      // 250 µs between CPU samples (V8's default is 1 ms): a reconcile takes a few ms.
      await inspector.send('Profiler.setSamplingInterval', { interval: 250 });
      await inspector.send('Runtime.runIfWaitingForDebugger');
    },
  });
  const { machineText } = describeMachine();
  const cluster = await clusterUp({ pods: n + 50, extraArgs: CLUSTER_ARGS, log });
  const hold = holdCluster(values['keep-cluster'] ?? false, stopPeers, log);
  const context = { cluster, log };
  try {
    await peer.install(context);
    await emptyNamespace(cluster, peer.namespace, peer.websites, { everything: true });
    const operator = await startPeer(peer, context);
    const watchers = watchWebsites(cluster, peer);
    try {
      await watchers.synced();
      const live = async (): Promise<HeapNode> => {
        await inspector!.send('HeapProfiler.collectGarbage');
        return (await inspector!.send<{ profile: { head: HeapNode } }>('HeapProfiler.getSamplingProfile')).profile.head;
      };
      const idleRss = await steadyRss(operator.pid);
      const idleHeap = await live();
      log(`idle: RSS ${mib(idleRss)}; CPU profile of a burst of ${n}`);
      // The watch events the operator receives, received here too: counted, and kept as the
      // lines the API server sent, to time decoding them alone (the floor under any controller).
      const events = new Map<string, number>();
      const lines: string[] = [];
      const streams = await Promise.all(
        [peer.websites, DEPLOYMENTS, SERVICES].map((type) =>
          cluster.admin.watch(
            type,
            peer.namespace,
            {},
            (eventType, object) => {
              const key = `${type.resource} ${eventType}`;
              events.set(key, (events.get(key) ?? 0) + 1);
              lines.push(JSON.stringify({ type: eventType, object }));
            },
            () => undefined,
            3_600_000,
          ),
        ),
      );
      await inspector!.send('Profiler.start');
      const burst = await createAll(peer, cluster, watchers, operator, names('w', n), 1, log);
      const { profile } = await inspector!.send<{ profile: CpuProfile }>('Profiler.stop');
      for (const stream of streams) stream.abort();
      const decodeMs = decodeTime(lines);
      const holdingHeap = await live();
      const holdingRss = await steadyRss(operator.pid);

      const chunks = await bundleChunks();
      const cpu = cpuSelfTime(
        { ...profile, nodes: profile.nodes.filter((node) => node.callFrame.functionName !== '(idle)') },
        chunks,
      );
      const heapIdle = heapByPackage(idleHeap, chunks);
      const heapHolding = heapByPackage(holdingHeap, chunks);
      await writeFile(join(out, 'burst.cpuprofile'), JSON.stringify(profile));
      await writeFile(join(out, 'idle.heapprofile'), JSON.stringify({ head: idleHeap, samples: [] }));
      await writeFile(join(out, 'holding.heapprofile'), JSON.stringify({ head: holdingHeap, samples: [] }));
      const ms = (v: number) => v.toFixed(0);
      const report = [
        '# Operator profile',
        '',
        `Written by \`npm run bench:profile -- --n ${n}\` (bench/profile.ts) on ${new Date().toISOString().slice(0, 10)}; ${machineText}. The raw profiles are in \`${relative(ROOT, out)}/\` (not committed).`,
        '',
        `The bundle as the image runs it, through a burst of ${n} Websites (8 creates in flight) until every one was Ready: ` +
          `${ms(burst.cpuMs)} ms of process CPU (${(burst.cpuMs / n).toFixed(1)} ms per Website; all threads, from /proc), ` +
          `${ms(cpu.total)} ms of it sampled on the main thread (idle excluded). RSS ${mib(idleRss)} idle, ${mib(holdingRss)} holding ${n}; ` +
          `live heap sampled ${mib(heapIdle.total)} idle, ${mib(heapHolding.total)} holding ${n}.`,
        '',
        `Watch events per Website, as the operator's watches receive them: ${[...events]
          .sort()
          .map(([key, count]) => `${key} ${(count / n).toFixed(2)}`)
          .join(
            ', ',
          )}; ${(lines.length / n).toFixed(1)} in all, ${(lines.reduce((sum, line) => sum + line.length, 0) / n / 1024).toFixed(1)} KiB. ` +
          `Decoding them alone (JSON.parse of each line, warm, median of 5 rounds in this process) takes ${(decodeMs / n).toFixed(2)} ms per Website: ` +
          `the operator's CPU per Website is ${(burst.cpuMs / decodeMs).toFixed(1)}× that floor.`,
        '',
        '## Idle RSS by package',
        '',
        `Each package the operator imports, bundled alone as the operator is and run with dist/'s NODE_OPTIONS and MALLOC_ARENA_MAX, ` +
          `over an entry that loads nothing (${mib(modules.nothing)}); all of them together add ${mib(modules.all)}. ` +
          "Beside the others, a package adds less than alone: the ones it shares with them (client-node loads undici) and Node's built-in modules (tls, http2) count once.",
        '',
        '| package | alone, MiB | beside the others, MiB |',
        '| --- | ---: | ---: |',
        ...modules.modules.map(
          (m) => `| ${m.title} | ${(m.alone / 2 ** 20).toFixed(1)} | ${(m.marginal / 2 ** 20).toFixed(1)} |`,
        ),
        '',
        '## CPU: self time by package',
        '',
        rowsTable('package', 'ms', cpu.packages, ms),
        '',
        '## CPU: self time by function',
        '',
        rowsTable('function', 'ms', cpu.functions, ms),
        '',
        '## Live heap idle, by the package that allocated it',
        '',
        rowsTable('package', 'KiB', heapIdle.packages, (v) => (v / 1024).toFixed(0)),
        '',
        `## Live heap holding ${n}, by the package that allocated it`,
        '',
        rowsTable('package', 'KiB', heapHolding.packages, (v) => (v / 1024).toFixed(0)),
        '',
        `## Live heap holding ${n}, by the function that allocated it`,
        '',
        rowsTable('function', 'KiB', heapHolding.functions, (v) => (v / 1024).toFixed(0)),
        '',
      ].join('\n');
      await writeFile(join(ROOT, 'docs/measure/results/profile.md'), report);
      console.log(report);
    } finally {
      await operator.stop();
      await watchers.stop();
      inspector?.close();
    }
  } finally {
    await hold.release();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
