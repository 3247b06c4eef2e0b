// The peer process under measurement, as the phases see it from outside: started and stopped
// with the benchmark's bookkeeping, its CPU time from /proc, its metrics, and watches of its
// Websites and their Deployments.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { DEPLOYMENTS, type KubeObject } from '../../operator/src/controller/kube-api.ts';
import { type BenchCluster, Watcher } from '../cluster.ts';
import type { Peer, PeerContext, PeerProcess } from '../peer.ts';

/** CPU time (user + system) of a process so far, in ms, from /proc/<pid>/stat. */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

export async function metricsText(process: PeerProcess): Promise<string> {
  const response = await fetch(process.metricsUrl);
  if (!response.ok) throw new Error(`GET ${process.metricsUrl}: ${response.status}`);
  return response.text();
}

/** A peer process with the benchmark's bookkeeping: stopped once, however the run ends. */
const running = new Set<PeerProcess>();

/** Stops every peer process still running (the benchmark was interrupted). */
export async function stopPeers(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop().catch(() => undefined)));
}

export async function startPeer(peer: Peer, context: PeerContext): Promise<PeerProcess> {
  const process = await peer.start(context);
  running.add(process);
  // Named one by one: an adapter's process may be a class instance, whose getters a spread drops.
  return {
    pid: process.pid,
    metricsUrl: process.metricsUrl,
    heapAfterGc: process.heapAfterGc?.bind(process),
    stop: async () => {
      running.delete(process);
      await process.stop();
    },
  };
}

export interface Watchers {
  readonly deployments: Watcher;
  readonly websites: Watcher;
  synced(): Promise<void>;
  stop(): Promise<void>;
}

export function watchWebsites(cluster: BenchCluster, peer: Peer): Watchers {
  const deployments = new Watcher(cluster.admin, DEPLOYMENTS, peer.namespace);
  const websites = new Watcher<KubeObject>(cluster.admin, peer.websites, peer.namespace, {
    reached: (w) => peer.ready(w),
  });
  return {
    deployments,
    websites,
    synced: async () => {
      await Promise.all([deployments.synced(), websites.synced()]);
    },
    stop: async () => {
      await Promise.all([deployments.stop(), websites.stop()]);
    },
  };
}
