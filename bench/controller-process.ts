// A controller-runtime controller as a local process of the benchmark (kro, bench/kro.ts; the Go
// peer, bench/go-operator.ts): started with metrics and probes on free local ports, its log kept,
// observed through its Prometheus endpoint, stopped with SIGTERM.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { sumMetric } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { freePort } from '../harness/process/ports.ts';
import type { PeerProcess } from './peer.ts';

/** The local ports a controller is started on. */
export interface ControllerPorts {
  readonly metricsPort: number;
  readonly healthPort: number;
}

/** A running controller. */
export class ControllerProcess implements PeerProcess {
  /** The last lines of its log (stdout and stderr), for error messages. */
  readonly log: string[] = [];
  readonly exited: Promise<number | null>;
  readonly metricsPort: number;
  readonly healthPort: number;
  private readonly name: string;
  private readonly child: ChildProcess;

  private constructor(name: string, child: ChildProcess, { metricsPort, healthPort }: ControllerPorts) {
    this.name = name;
    this.child = child;
    this.metricsPort = metricsPort;
    this.healthPort = healthPort;
    // 'close': once its output is read to the end, so the log holds its last lines too.
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ? null : code)));
    const keep = (line: string) => {
      this.log.push(line);
      if (this.log.length > 200) this.log.shift();
    };
    createInterface(child.stdout!).on('line', keep);
    createInterface(child.stderr!).on('line', keep);
  }

  /**
   * Starts `binary` with the arguments `args` gives for two free local ports (metrics, probes).
   * Nothing of this process's environment but PATH: KUBECONFIG and the like must not leak in.
   */
  static async start(
    name: string,
    binary: string,
    args: (ports: ControllerPorts) => string[],
  ): Promise<ControllerProcess> {
    const ports = { metricsPort: await freePort(), healthPort: await freePort() };
    const child = spawn(binary, args(ports), { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    return new ControllerProcess(name, child, ports);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get metricsUrl(): string {
    return `http://127.0.0.1:${this.metricsPort}/metrics`;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async metrics(): Promise<string> {
    return (await fetch(this.metricsUrl)).text();
  }

  /** Resolves once `done` holds for its metrics; fails at once if it exits, with its last log lines. */
  async until(what: string, done: (metrics: string) => boolean, timeoutMs: number): Promise<void> {
    await eventually(
      what,
      async () => {
        if (!this.running)
          throw new Error(
            `${this.name} exited (${this.child.exitCode ?? this.child.signalCode}):\n${this.log.slice(-30).join('\n')}`,
          );
        return done(await this.metrics().catch(() => ''));
      },
      {
        timeoutMs,
        intervalMs: 250,
        progress: () => `last log lines:\n${this.log.slice(-10).join('\n')}`,
        stopOnError: true,
      },
    );
  }

  /** Resolves once it holds the Lease `lease` (controller-runtime reconciles nothing before). */
  leading(lease: string, timeoutMs = 60_000): Promise<void> {
    return this.until(
      `${this.name} to lead`,
      (text) => sumMetric(text, 'leader_election_master_status', { name: lease }) === 1,
      timeoutMs,
    );
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`. */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.running) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.running && this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}
