// Memory: the RSS and V8 heap of a process holding N Websites, against the same process idle.
import type { PeerProcess } from '../peer.ts';
import type { FigureRecord } from '../report.ts';

/** The RSS of a process holding `n` Websites, against the same process idle. */
export function memoryRecord(subject: string, n: number, rss: number, idleRss: number, detail?: string): FigureRecord {
  return {
    subject,
    phase: 'memory',
    n,
    figure: 'rssHoldingN',
    label: 'RSS holding N Websites and their children',
    unit: 'bytes',
    value: rss,
    baseline: idleRss,
    baselineLabel: 'same process, idle',
    detail,
  };
}

/**
 * A Node peer's V8 heap after a full GC holding `n` Websites, against the same process idle, and
 * per Website: what the caches and queues hold, without the garbage a burst leaves behind.
 */
export async function heapRecords(
  subject: string,
  n: number,
  process: PeerProcess,
  idleHeap: number,
): Promise<FigureRecord[]> {
  if (!process.heapAfterGc) return [];
  const heap = await process.heapAfterGc();
  const record = (figure: string, label: string, value: number, baseline?: number): FigureRecord => ({
    subject,
    phase: 'memory',
    n,
    figure,
    label,
    unit: 'bytes',
    value,
    baseline,
    baselineLabel: baseline === undefined ? undefined : 'same process, idle',
  });
  return [
    record('heapAfterGcHoldingN', 'V8 heap after a full GC, holding N Websites', heap, idleHeap),
    record('heapAfterGcPerWebsite', 'V8 heap after a full GC, per Website held (above idle)', (heap - idleHeap) / n),
  ];
}
