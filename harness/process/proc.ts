// What the kernel says about a local process (/proc), without asking the process: the benchmark's,
// the image test's and the operator harness's memory readings.
import { readFile } from 'node:fs/promises';

/** Resident set size (VmRSS) of process `pid`, in bytes. */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmRSS in /proc/${pid}/status (has the process exited?)`);
  return Number(kib[1]) * 1024;
}

/** The median of three RSS readings `gapMs` apart: one reading can catch a collection half done. */
export async function steadyRss(pid: number, gapMs = 1000): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 3; i++) {
    // unref'd: a pending reading never keeps a test runner alive.
    if (i) await new Promise<void>((resolve) => setTimeout(resolve, gapMs).unref());
    readings.push(await rssBytes(pid));
  }
  return readings.sort((a, b) => a - b)[1];
}
