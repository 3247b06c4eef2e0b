// Idle: a subject's RSS and V8 heap with its caches synced and no Website, against an idle Node
// process; the memory figures of the later phases are read against these.
import { steadyRss } from '../../harness/process/proc.ts';
import { sleep } from '../../operator/src/controller/backoff.ts';
import type { PeerProcess } from '../peer.ts';
import type { FigureRecord } from '../report.ts';
import type { RunBaselines } from './plan.ts';

/** The idle figures of `subject`'s freshly started `process`, and its idle RSS and heap (NaN: none). */
export async function idleRecords(
  subject: string,
  process: PeerProcess,
  baselines: RunBaselines,
): Promise<{ idleRss: number; idleHeap: number; records: FigureRecord[] }> {
  const records: FigureRecord[] = [];
  let idleHeap = Number.NaN;
  // Idle: the first reading after start includes start-up garbage; give V8 or Go a moment.
  await sleep(5000);
  const idleRss = await steadyRss(process.pid);
  if (process.heapAfterGc) {
    idleHeap = await process.heapAfterGc();
    records.push({
      subject,
      phase: 'idle',
      n: 0,
      figure: 'heapAfterGcIdle',
      label: 'V8 heap after a full GC, idle',
      unit: 'bytes',
      value: idleHeap,
    });
  }
  records.push({
    subject,
    phase: 'idle',
    n: 0,
    figure: 'rssIdle',
    label: 'RSS, idle (no Website)',
    unit: 'bytes',
    value: idleRss,
    baseline: baselines.idleNodeRss,
    baselineLabel: 'an idle Node process',
  });
  return { idleRss, idleHeap, records };
}
