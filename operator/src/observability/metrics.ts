import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every Prometheus metric of the operator, in one registry. Names follow client-go and
 * controller-runtime, so dashboards and alerts written for Go controllers work unchanged.
 */
export class OperatorMetrics {
  readonly registry = new Registry();

  /** API requests by verb (GET, LIST, WATCH, CREATE, APPLY, PATCH, UPDATE, DELETE), resource and HTTP code. */
  readonly apiRequests = new Counter({
    name: 'rest_client_requests_total',
    help: 'API server requests, by verb, resource and HTTP status code (0: no response).',
    labelNames: ['verb', 'resource', 'code'] as const,
    registers: [this.registry],
  });
  readonly apiLatency = new Histogram({
    name: 'rest_client_request_duration_seconds',
    help: 'API server request latency, including time spent waiting for the client-side rate limit.',
    labelNames: ['verb', 'resource'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly deadConnections = new Counter({
    name: 'rest_client_dead_connections_total',
    help: 'HTTP/2 connections to the API server closed because nothing, not even a PING ack, arrived for ReadIdleTimeout + PingTimeout (45 s); their requests and watches start again on a new one.',
    registers: [this.registry],
  });
  readonly reconciles = new Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Reconciles, by controller and result (success, error).',
    labelNames: ['controller', 'result'] as const,
    registers: [this.registry],
  });
  readonly reconcileErrors = new Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Reconciles that failed: requeued with backoff, or not at all when the error is terminal.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly terminalReconcileErrors = new Counter({
    name: 'controller_runtime_terminal_reconcile_errors_total',
    help: 'Reconciles that failed with an error retrying cannot fix: not requeued; the next change to the object or a child, or the periodic resync, reconciles it again.',
    labelNames: ['controller'] as const,
    registers: [this.registry],
  });
  readonly reconcileTime = new Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Duration of one reconcile.',
    labelNames: ['controller'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly queueDepth = new Gauge({
    name: 'workqueue_depth',
    help: 'Keys waiting in the work queue (not counting keys waiting out a backoff).',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  readonly queueAdds = new Counter({
    name: 'workqueue_adds_total',
    help: 'Keys added to the work queue (deduplicated adds are not counted).',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  readonly queueRetries = new Counter({
    name: 'workqueue_retries_total',
    help: 'Keys requeued with backoff after a failure.',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  readonly queueWait = new Histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'Time a key waited in the queue before a worker picked it up.',
    labelNames: ['name'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly informerRestarts = new Counter({
    name: 'informer_watch_restarts_total',
    help: 'Watches restarted, by resource and reason (expired: 410 Gone, relist; closed; stalled; error).',
    labelNames: ['resource', 'reason'] as const,
    registers: [this.registry],
  });
  /** The informer caches that `cacheObjects` reports, registered while their informer runs. */
  private readonly caches = new Set<{ resource: string; namespace: string; size: () => number }>();
  /** Read at each scrape, so it costs nothing between scrapes: what the operator's memory grows with. */
  readonly cacheObjects = new Gauge({
    name: 'informer_cache_objects',
    help: 'Objects held in an informer cache, by resource and namespace (*: all namespaces), while its informer runs.',
    labelNames: ['resource', 'namespace'] as const,
    registers: [this.registry],
    collect: () => {
      this.cacheObjects.reset();
      for (const { resource, namespace, size } of this.caches) this.cacheObjects.inc({ resource, namespace }, size());
    },
  });
  readonly websiteCapacity = new Gauge({
    name: 'website_capacity',
    help: 'Websites this operator is sized to hold (WEBSITE_CAPACITY: its memory limit was chosen for them); compare informer_cache_objects{resource="websites"}.',
    registers: [this.registry],
  });
  readonly namespaceSynced = new Gauge({
    name: 'watched_namespace_synced',
    help: '1 once the Website, Deployment and Service caches of a watched namespace (*: all namespaces) have synced; 0 until then, for example while the namespace is not granted (see the error log).',
    labelNames: ['namespace'] as const,
    registers: [this.registry],
  });
  readonly leader = new Gauge({
    name: 'leader_election_master_status',
    help: '1 while this replica holds the leader Lease, else 0.',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  /**
   * A standby's value grows for as long as it stands by; the minimum over all replicas is how long
   * no replica has led (an alert on it catches an operator that never reconciles).
   */
  readonly notLeading = new Gauge({
    name: 'leader_election_not_leading_seconds',
    help: 'Seconds this replica has campaigned for the leader Lease without holding it (0 while leading), updated at each attempt.',
    labelNames: ['name'] as const,
    registers: [this.registry],
  });
  readonly conversions = new Counter({
    name: 'conversion_webhook_requests_total',
    help: 'ConversionReview requests answered, by result (Success, Failed).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  /** Reports the size of an informer's cache in `informer_cache_objects`; the function returned stops it. */
  trackCache(resource: string, namespace: string, size: () => number): () => void {
    const cache = { resource, namespace, size };
    this.caches.add(cache);
    return () => this.caches.delete(cache);
  }

  constructor({ processMetrics = true }: { processMetrics?: boolean } = {}) {
    // process_resident_memory_bytes, nodejs_eventloop_lag_seconds, ...
    if (processMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
