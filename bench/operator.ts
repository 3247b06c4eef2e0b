// The website operator as a controller under test (bench/peer.ts): the bundle its image runs
// (operator/build/operator.mjs, built from the working tree by operator/bundle.ts) with
// NODE_ENV=production, as its ServiceAccount under dist/'s Role, at its defaults; and the cost of
// rendering one Website through the construct.
import { App, Chart } from 'cdk8s';
import { serviceAccountKubeconfig } from '../harness/cluster/kubectl.ts';
import { OPERATOR_NS } from '../harness/operator/operator-manifests.ts';
import { OperatorProcess, operatorBundle } from '../harness/operator/operator-process.ts';
import { sumMetric } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { freePort } from '../harness/process/ports.ts';
import { LEASE_NAME } from '../lib/operator/names.ts';
import {
  DEFAULT_OPERATOR_CAPACITY,
  DEFAULT_OPERATOR_RESOURCES,
  nodeOptionsFor,
  OPERATOR_MALLOC_ARENA_MAX,
  OPERATOR_NODE_FLAGS,
} from '../lib/operator/operator-deployment.ts';
import { DEFAULT_GROUP } from '../lib/website/schema.ts';
import type { WebsiteV1 } from '../lib/website/types.ts';
import { workloadName } from '../lib/workload/website-workload.ts';
import { type KubeObject, LEASES } from '../operator/src/controller/kube-api.ts';
import { renderWorkload } from '../operator/src/reconciler/render.ts';
import { websitesType } from '../operator/src/reconciler/website.ts';
import { installOperatorObjects } from './cluster.ts';
import { heapAfterGc } from './inspector.ts';
import { type Peer, type PeerContext, serviceAccountUser } from './peer.ts';
import { median } from './report.ts';

/**
 * What every peer reconciling our Website CRD (web.example.com/v1) in `namespace` says of it: how a
 * Website is created and edited, its Deployment's name, and readiness as our operator reports it
 * (the Ready condition True for the current generation).
 */
export function websiteCrdPeer(
  namespace: string,
): Pick<Peer, 'websites' | 'website' | 'edit' | 'deploymentName' | 'ready'> {
  return {
    websites: websitesType(DEFAULT_GROUP),
    website: (name, spec) => ({
      apiVersion: `${DEFAULT_GROUP}/v1`,
      kind: 'Website',
      metadata: { name, namespace },
      spec: { title: spec.title, replicas: spec.replicas, color: spec.color },
    }),
    edit: (spec) => ({ spec: { title: spec.title, replicas: spec.replicas, color: spec.color } }),
    deploymentName: workloadName,
    ready: (website: KubeObject) => {
      const w = website as WebsiteV1 & KubeObject;
      return (
        w.status?.conditions?.some(
          (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === w.metadata.generation,
        ) ?? false
      );
    },
  };
}

/** The environment the operator Deployment of dist/ gives the operator (its V8 heap cap among it). */
export function deploymentEnv(): Record<'NODE_ENV' | 'NODE_OPTIONS' | 'MALLOC_ARENA_MAX' | 'WEBSITE_CAPACITY', string> {
  return {
    NODE_ENV: 'production',
    NODE_OPTIONS: nodeOptionsFor(DEFAULT_OPERATOR_RESOURCES.memoryLimit),
    MALLOC_ARENA_MAX: OPERATOR_MALLOC_ARENA_MAX,
    WEBSITE_CAPACITY: String(DEFAULT_OPERATOR_CAPACITY),
  };
}

/**
 * The website operator at its defaults: only what a Deployment of dist/ sets besides (no
 * CONCURRENCY, KUBE_API_QPS or KUBE_API_BURST), the webhook off (the benchmark creates v1 only),
 * `env` added (e.g. `{ KUBE_API_QPS: '20', KUBE_API_BURST: '30' }` for another column; its
 * NODE_OPTIONS go after the Deployment's, so `--max-semi-space-size=1` tries one V8 flag more).
 */
export function websiteOperatorPeer({
  title = 'website-operator',
  env = {},
  nodeArgs = [],
  inspect,
}: {
  title?: string;
  env?: Record<string, string>;
  /** Node and V8 flags on its command line after the image's, for those NODE_OPTIONS refuses (`--heap-growing-percent=20`). */
  nodeArgs?: readonly string[];
  /**
   * Profiling (bench/profile.ts): the operator starts paused in its inspector (--inspect-brk) on
   * `port`, and this attaches to it and lets it run, so nothing of its start escapes the profilers.
   */
  inspect?: (port: number) => Promise<void>;
} = {}): Peer {
  let kubeconfig: string | undefined;
  return {
    title,
    description: `${title}: the bundle operator/build/operator.mjs, run as the image runs it (node ${[...OPERATOR_NODE_FLAGS, ...nodeArgs].join(' ')}, NODE_ENV=production, the Deployment's NODE_OPTIONS), as its ServiceAccount under dist/'s Role, leader election on, LOG_LEVEL=info, WEBHOOK_ENABLED=false${
      Object.keys(env).length
        ? `, ${Object.entries(env)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`
        : ', every other setting at its default'
    }`,
    namespace: OPERATOR_NS,
    user: serviceAccountUser(OPERATOR_NS, 'website-operator'),
    queueWait: { metric: 'workqueue_queue_duration_seconds', labels: { name: 'website' } },
    async install({ cluster, log }: PeerContext) {
      await installOperatorObjects(cluster);
      log('website-operator: the bundle (operator/bundle.ts)');
      await operatorBundle();
    },
    async start({ cluster }: PeerContext) {
      // A Lease left by a killed run would make the operator wait for it to expire.
      await cluster.admin.delete(LEASES, { namespace: OPERATOR_NS, name: LEASE_NAME }).catch(() => undefined);
      kubeconfig ??= await serviceAccountKubeconfig(cluster);
      const deployment = deploymentEnv();
      // Where the inspector listens once SIGUSR1 opens it, for the heap figure (bench/inspector.ts).
      const inspectPort = await freePort();
      deployment.NODE_OPTIONS += inspect
        ? ` --inspect-brk=127.0.0.1:${inspectPort}`
        : ` --inspect-port=127.0.0.1:${inspectPort}`;
      // Settled either way before it is awaited: the operator waits paused until it is attached.
      const attached = inspect?.(inspectPort).then(
        () => undefined,
        (error: Error) => error,
      );
      const { NODE_OPTIONS: moreNodeOptions, ...moreEnv } = env;
      if (moreNodeOptions) deployment.NODE_OPTIONS += ` ${moreNodeOptions}`;
      const operator = await OperatorProcess.start(
        'bench',
        kubeconfig,
        { ...deployment, LOG_LEVEL: 'info', ...moreEnv },
        { nodeArgs },
      );
      const attachError = await attached;
      if (attachError) {
        await operator.kill();
        throw attachError;
      }
      try {
        await eventually(
          'the operator to lead',
          async () => {
            if (!operator.running) throw new Error(`the operator exited:\n${operator.stderr.slice(-20).join('\n')}`);
            return sumMetric((await operator.get('/metrics')).body, 'leader_election_master_status') === 1;
          },
          { timeoutMs: 60_000, stopOnError: true },
        );
      } catch (error) {
        await operator.kill();
        throw error;
      }
      return {
        pid: operator.pid,
        metricsUrl: `http://127.0.0.1:${operator.metricsPort}/metrics`,
        heapAfterGc: () => heapAfterGc(operator.pid, inspectPort),
        stop: async () => {
          const timer = setTimeout(() => void operator.kill(), 30_000);
          await operator.stop();
          clearTimeout(timer);
        },
      };
    },
    ...websiteCrdPeer(OPERATOR_NS),
  };
}

export interface RenderTiming {
  /** renderWorkload: WebsiteWorkload in a fresh App and Chart, to JSON (µs per Website). */
  readonly renderUs: number;
  /** An empty App and Chart, to JSON: cdk8s's fixed cost (µs). */
  readonly emptyChartUs: number;
  /** JSON.parse(JSON.stringify(...)) of the rendered Deployment and Service: copying the output (µs). */
  readonly jsonRoundTripUs: number;
  readonly iterations: number;
}

/**
 * Render time per Website, warm, in this process: `rounds` rounds of `iterations` each of render,
 * empty chart and JSON round trip, interleaved so they see the same machine; medians of the rounds.
 */
export function measureRender(iterations = 500, rounds = 7): RenderTiming {
  const website = (i: number): WebsiteV1 => ({
    apiVersion: `${DEFAULT_GROUP}/v1`,
    kind: 'Website',
    metadata: {
      name: `w-${i}`,
      namespace: OPERATOR_NS,
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
      generation: 1,
    },
    spec: { title: `Website ${i}`, replicas: 1, color: '#2196F3' },
  });
  const inputs = Array.from({ length: iterations }, (_, i) => website(i));
  const outputs = inputs.map((w) => renderWorkload(w));
  let sink = 0;
  const time = (task: (i: number) => void) => {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) task(i);
    return ((performance.now() - start) * 1000) / iterations;
  };
  const render = (i: number) => {
    sink += renderWorkload(inputs[i])[0].object.metadata!.name!.length;
  };
  const empty = () => {
    sink += new Chart(new App({ outdir: '/dev/null' }), 'website').toJson().length;
  };
  const json = (i: number) => {
    sink += (JSON.parse(JSON.stringify(outputs[i])) as (typeof outputs)[number])[1].object.metadata!.name!.length;
  };
  // Warm up: JIT and cdk8s's lazy initialisation.
  time(render);
  time(empty);
  time(json);
  const results = { render: [] as number[], empty: [] as number[], json: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    results.render.push(time(render));
    results.empty.push(time(empty));
    results.json.push(time(json));
  }
  if (sink === 0) throw new Error('nothing was rendered');
  return {
    renderUs: median(results.render),
    emptyChartUs: median(results.empty),
    jsonRoundTripUs: median(results.json),
    iterations: iterations * rounds,
  };
}
