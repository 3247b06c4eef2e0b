import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { isConflict, isNotFound } from './api-error.ts';
import { sleep } from './backoff.ts';
import { type KubeApi, type KubeObject, LEASES } from './kube-api.ts';
import { microTime } from './time.ts';

/**
 * Leader election on a coordination.k8s.io/v1 Lease, the algorithm of client-go's leaderelection
 * package (client-node has only the Lease type):
 * - a candidate takes the Lease when it does not exist, is released (no holder), or has not been
 *   renewed for leaseDuration as observed on the candidate's own clock (so clock skew between
 *   replicas does not matter);
 * - the leader renews every retryPeriod; when it could not renew for renewDeadline it stops
 *   leading before anyone else can take over (renewDeadline < leaseDuration);
 * - on shutdown the leader releases the Lease (no holder, 1 s duration), so a successor starts
 *   at once instead of waiting out the lease.
 * Writes are optimistic: every update carries the resourceVersion that was read.
 */

export interface LeaderElectionOptions {
  readonly client: KubeApi;
  readonly namespace: string;
  readonly name: string;
  /** Unique per replica: the pod name. */
  readonly identity: string;
  /** @default 15000 */
  readonly leaseDurationMs?: number;
  /** @default 10000 */
  readonly renewDeadlineMs?: number;
  /** @default 2000 */
  readonly retryPeriodMs?: number;
  readonly logger?: Logger;
  readonly metrics?: OperatorMetrics;
}

interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Where this replica stands in the election: what the readiness detail and the metrics show. */
export interface LeaderElectionStatus {
  readonly lease: string;
  readonly leading: boolean;
  /** Since when (Date.now()) this replica campaigns without leading; undefined while leading or before it campaigns. */
  readonly notLeadingSince?: number;
  /** The holder of the Lease as last read, when it is another replica. */
  readonly holder?: string;
  /** Why the last attempt could not take or renew the Lease (not "held by another"), until one succeeds. */
  readonly error?: string;
}

export class LeaderElector {
  private leading = false;
  /** The last Lease read, and when (on our clock) its content last changed. */
  private observed?: { lease: Lease; at: number };
  private notLeadingSince?: number;
  private lastError?: string;
  /** When (performance.now()) the last successful take or renewal of the Lease was sent. */
  private renewedAt = Number.NEGATIVE_INFINITY;
  /** While leading: what ends the leadership and aborts its work. */
  private held?: { readonly leadership: AbortController; readonly lease: AbortController };

  private readonly options: LeaderElectionOptions;

  constructor(options: LeaderElectionOptions) {
    this.options = options;
    const { leaseDurationMs = 15_000, renewDeadlineMs = 10_000, retryPeriodMs = 2_000 } = options;
    if (!(leaseDurationMs > renewDeadlineMs && renewDeadlineMs > retryPeriodMs && retryPeriodMs > 0)) {
      throw new Error(
        `leader election needs leaseDuration > renewDeadline > retryPeriod > 0 (got ${leaseDurationMs} ms, ${renewDeadlineMs} ms, ${retryPeriodMs} ms)`,
      );
    }
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Throws unless this replica leads on a Lease whose last renewal was sent less than
   * renewDeadline ago, on the monotonic clock, which counts a pause of the process. The renewal
   * loop notices a stale Lease only when its timer fires, and a process resumed from a pause (a
   * SIGSTOP, a frozen VM) runs its reconciles' continuations first, while another replica may
   * already lead: a stale Lease refused here ends the leadership at once, as a renewal failing for
   * renewDeadline does, so those reconciles are aborted before they write.
   */
  fence(): void {
    const { renewDeadlineMs = 10_000, logger } = this.options;
    const lease = `${this.options.namespace}/${this.options.name}`;
    const held = this.held;
    if (!held) throw new Error(`not holding the Lease ${lease}`);
    const age = performance.now() - this.renewedAt;
    if (age < renewDeadlineMs && !held.lease.signal.aborted) return;
    if (!held.lease.signal.aborted) {
      logger?.warn(
        { lease, renewedSecondsAgo: Math.round(age / 1000) },
        'the Lease was last renewed longer ago than the renew deadline (was the process paused?): leading ends before anything more is written',
      );
      held.leadership.abort();
      held.lease.abort();
    }
    throw held.lease.signal.reason;
  }

  status(): LeaderElectionStatus {
    const holder = this.observed?.lease.spec?.holderIdentity;
    return {
      lease: `${this.options.namespace}/${this.options.name}`,
      leading: this.leading,
      notLeadingSince: this.notLeadingSince,
      holder: holder && holder !== this.options.identity ? holder : undefined,
      error: this.lastError,
    };
  }

  /**
   * Campaigns until `signal` aborts. While leading, `lead(leadership)` runs; `leadership` aborts
   * when the Lease is lost or on shutdown, and the Lease is kept until `lead` has returned, so a
   * successor never overlaps with work in flight. After a loss, the candidate campaigns again.
   */
  async run(signal: AbortSignal, lead: (leadership: AbortSignal, lease: AbortSignal) => Promise<void>): Promise<void> {
    const { retryPeriodMs = 2_000, logger } = this.options;
    while (!signal.aborted) {
      this.notLeadingSince ??= Date.now();
      // A campaign's request is cut by the stop: nothing is held yet, so nothing needs finishing.
      if (!(await this.tryAcquireOrRenew(signal))) {
        this.notLeadingChanged();
        await sleep(retryPeriodMs * (1 + Math.random() * 0.2), signal);
        continue;
      }
      this.setLeading(true);
      logger?.info(
        { lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity },
        'became leader',
      );
      // `leadership` ends taking new work (a stop, or the Lease lost); `lease` aborts the work in
      // flight, only when the Lease is lost. Renewals go on while that work drains, so a stopping
      // leader finishes its reconciles holding the Lease; when the API server cannot renew it
      // within renewDeadline, another replica may take it soon, so nothing more may be written.
      const leadership = new AbortController();
      const lease = new AbortController();
      const drained = new AbortController();
      const stopOnShutdown = () => leadership.abort();
      signal.addEventListener('abort', stopOnShutdown, { once: true });
      this.held = { leadership, lease };
      const renewing = this.renewUntilLost(drained.signal).then(() => {
        leadership.abort();
        lease.abort();
      });
      await lead(leadership.signal, lease.signal);
      drained.abort();
      await renewing;
      this.held = undefined;
      signal.removeEventListener('abort', stopOnShutdown);
      this.setLeading(false);
      if (signal.aborted) {
        await this.release();
        logger?.info({ lease: `${this.options.namespace}/${this.options.name}` }, 'released the lease');
      } else {
        logger?.warn({ lease: `${this.options.namespace}/${this.options.name}` }, 'lost leadership, campaigning again');
      }
    }
  }

  /**
   * Renews every retryPeriod; returns when a renewal could not succeed within renewDeadline, or on
   * stop. An attempt gets what is left of renewDeadline (client-go's renew context): a request the
   * API server never answers must not keep this replica leading past its Lease.
   */
  private async renewUntilLost(stop: AbortSignal): Promise<void> {
    const { retryPeriodMs = 2_000, renewDeadlineMs = 10_000 } = this.options;
    let lastRenew = performance.now();
    while (!stop.aborted) {
      await sleep(retryPeriodMs, stop);
      if (stop.aborted) return;
      const left = Math.max(1, Math.ceil(renewDeadlineMs - (performance.now() - lastRenew)));
      if (await this.tryAcquireOrRenew(AbortSignal.any([stop, AbortSignal.timeout(left)]))) {
        lastRenew = performance.now();
      } else if (performance.now() - lastRenew >= renewDeadlineMs || this.heldByOther()) {
        return;
      }
    }
  }

  private heldByOther(): boolean {
    const holder = this.observed?.lease.spec?.holderIdentity;
    return !!holder && holder !== this.options.identity;
  }

  /** One attempt; true when we hold the Lease afterwards. Errors count as "not now". */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const { client, namespace, name, identity, leaseDurationMs = 15_000, logger } = this.options;
    const now = new Date();
    const sent = performance.now();
    try {
      const current = await client.get<Lease>(LEASES, { namespace, name }, { signal });
      this.lastError = undefined;
      if (!current) {
        const created = await client.create<Lease>(
          LEASES,
          {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
              acquireTime: microTime(now),
              renewTime: microTime(now),
              leaseTransitions: 0,
            },
          },
          { signal },
        );
        this.observe(created);
        this.renewedAt = sent;
        return true;
      }
      this.observe(current);
      const spec = current.spec ?? {};
      const mine = spec.holderIdentity === identity;
      const expired = performance.now() > this.observed!.at + (spec.leaseDurationSeconds ?? 0) * 1000;
      if (!mine && spec.holderIdentity && !expired) return false;
      const updated = await client.update<Lease>(
        LEASES,
        {
          ...current,
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
            acquireTime: mine ? spec.acquireTime : microTime(now),
            renewTime: microTime(now),
            leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
          },
        },
        undefined,
        { signal },
      );
      this.observe(updated);
      this.renewedAt = sent;
      return true;
    } catch (error) {
      // A conflict means someone else wrote first: not an error, just not us this round.
      if (isConflict(error)) return false;
      // Cut by the stop: nothing to report.
      if (signal.aborted) return false;
      // Anything else keeps this replica from ever leading, and so the operator from reconciling:
      // say so at every retry, with what to do about it.
      const lease = `${namespace}/${name}`;
      const code = (error as { code?: number }).code;
      const fix = isNotFound(error)
        ? `create the namespace ${namespace}, set OPERATOR_NAMESPACE to an existing namespace, or run with LEADER_ELECTION=false (one replica)`
        : code === 401 || code === 403
          ? `grant get, create and update on leases (coordination.k8s.io) named ${name} in namespace ${namespace} (the WebsiteOperator construct's Role does)`
          : 'check that the API server is reachable';
      this.lastError = `${(error as Error).message} (${fix})`;
      logger?.error(
        { lease, error: (error as Error).message, fix },
        `leader election: cannot take or renew the Lease ${lease}; not reconciling until it can`,
      );
      return false;
    }
  }

  private observe(lease: Lease): void {
    const previous = this.observed?.lease;
    const changed = !previous || JSON.stringify(previous.spec) !== JSON.stringify(lease.spec);
    this.observed = { lease, at: changed ? performance.now() : this.observed!.at };
  }

  /**
   * Gives the Lease up: no holder, 1 s duration, so a successor takes it at its next retry. Both
   * requests together get one retryPeriod: an API server that does not answer by then will not
   * take the release either, and the Lease expires by itself after leaseDuration.
   */
  private async release(): Promise<void> {
    const { client, namespace, name, identity, retryPeriodMs = 2_000, logger } = this.options;
    const signal = AbortSignal.timeout(Math.ceil(retryPeriodMs));
    try {
      const current = await client.get<Lease>(LEASES, { namespace, name }, { signal });
      if (!current || current.spec?.holderIdentity !== identity) return;
      const now = microTime();
      await client.update<Lease>(
        LEASES,
        {
          ...current,
          spec: {
            ...current.spec,
            holderIdentity: undefined,
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
          },
        },
        undefined,
        { signal },
      );
    } catch (error) {
      logger?.warn(
        { error: (error as Error).message },
        'could not release the lease; a successor waits for it to expire',
      );
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.notLeadingSince = leading ? undefined : Date.now();
    this.options.metrics?.leader.set({ name: this.options.name }, leading ? 1 : 0);
    this.notLeadingChanged();
  }

  private notLeadingChanged(): void {
    const seconds = this.notLeadingSince === undefined ? 0 : (Date.now() - this.notLeadingSince) / 1000;
    this.options.metrics?.notLeading.set({ name: this.options.name }, seconds);
  }
}
