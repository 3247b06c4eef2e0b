// The Go peer of the website operator in `npm run bench`: bench/go-operator/main.go, a Website
// operator written the way controller-runtime's book writes one, doing the same job as ours (the
// same Website into the same Deployment and Service, finalizer, events, status, leader election),
// built by scripts/binaries.sh and run as a local process on the bench cluster as its own
// ServiceAccount. Its children come from renderWorkload's template (harness/go-operator), and its
// first start proves they are the objects our operator renders, before any figure is taken.
//
//   npm run bench                       the Go peer is a subject by default (bench/run.ts; --no-go leaves it out)
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectlOk, serviceAccountKubeconfig } from '../harness/cluster/kubectl.ts';
import {
  CONTROLLER_RUNTIME_VERSION,
  GO_OPERATOR_LEASE,
  GO_OPERATOR_NS,
  GO_OPERATOR_SERVICE_ACCOUNT,
  goOperatorRbacManifests,
  goOperatorTemplate,
} from '../harness/go-operator/go-operator.ts';
import { eventually } from '../harness/process/poll.ts';
import { DEFAULT_GROUP } from '../lib/website/schema.ts';
import type { WebsiteV1 } from '../lib/website/types.ts';
import { workloadName } from '../lib/workload/website-workload.ts';
import { firstDifference } from '../operator/src/controller/apply.ts';
import { DEPLOYMENTS, type KubeObject, LEASES, SERVICES } from '../operator/src/controller/kube-api.ts';
import { renderedKind, renderWorkload } from '../operator/src/reconciler/render.ts';
import { websitesType } from '../operator/src/reconciler/website.ts';
import { installOperatorObjects, ROOT } from './cluster.ts';
import { ControllerProcess } from './controller-process.ts';
import { websiteCrdPeer } from './operator.ts';
import type { Peer, PeerContext } from './peer.ts';
import { serviceAccountUser } from './peer.ts';

/** The Go peer's binary, built once by scripts/binaries.sh (minutes cold) and cached by a hash of its source. */
export async function goOperatorBinary(log: (message: string) => void = () => undefined): Promise<string> {
  log('go-website-operator: scripts/binaries.sh go-website-operator (a cold build takes minutes)');
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      'bash',
      [join(ROOT, 'scripts/binaries.sh'), 'go-website-operator'],
      { maxBuffer: 16 << 20 },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`scripts/binaries.sh go-website-operator failed: ${stderr.trim() || error.message}`))
          : resolve(stdout),
    ),
  );
  const path = /^go-website-operator=(.+)$/m.exec(out)?.[1];
  if (!path)
    throw new Error(`scripts/binaries.sh go-website-operator printed no go-website-operator=<path> line:\n${out}`);
  return path;
}

/**
 * Proves, on the cluster, that the Go peer writes what our operator renders: a Website with a title
 * that needs escaping and a light colour (black text), its Deployment and Service compared with
 * renderWorkload's for the same Website field by field; then deleted, through the finalizer.
 */
async function sameChildren({ cluster }: PeerContext): Promise<void> {
  const websites = websitesType(DEFAULT_GROUP);
  const name = 'go-operator-check';
  const key = { namespace: GO_OPERATOR_NS, name: workloadName(name) };
  const created = await cluster.admin.create<KubeObject>(websites, {
    apiVersion: `${DEFAULT_GROUP}/v1`,
    kind: 'Website',
    metadata: { name, namespace: GO_OPERATOR_NS },
    spec: { title: `<b>"Fish & Chips" isn't HTML</b>`, replicas: 2, color: '#ffeb3b' },
  });
  try {
    const [deployment, service] = await eventually(
      'the Go peer to create the Deployment and Service of its check Website',
      async () => {
        const children = await Promise.all([
          cluster.admin.get<KubeObject>(DEPLOYMENTS, key),
          cluster.admin.get<KubeObject>(SERVICES, key),
        ]);
        return children.every(Boolean) ? (children as KubeObject[]) : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const rendered = renderWorkload(created as WebsiteV1 & KubeObject);
    for (const [kind, actual] of [
      ['Deployment', deployment],
      ['Service', service],
    ] as const) {
      const difference = firstDifference(renderedKind(rendered, kind), actual);
      if (difference !== undefined)
        throw new Error(
          `the Go peer's ${kind} ${key.name} differs from renderWorkload's at ${difference}: its template (harness/go-operator) or its program (bench/go-operator/main.go) no longer renders what ours does`,
        );
    }
  } finally {
    await cluster.admin.delete(websites, { namespace: GO_OPERATOR_NS, name }).catch(() => undefined);
    await eventually(
      'the check Website to be gone, through the finalizer',
      async () => !(await cluster.admin.get(websites, { namespace: GO_OPERATOR_NS, name })),
      {
        timeoutMs: 60_000,
      },
    );
  }
}

/** The Go peer at controller-runtime's defaults (one worker, no client-side rate limit: GetConfig's QPS -1). */
export function goOperatorPeer(): Peer {
  let binary: string | undefined;
  let kubeconfig: string | undefined;
  let template: string | undefined;
  const start = async ({ cluster, log }: PeerContext): Promise<ControllerProcess> => {
    binary ??= await goOperatorBinary(log);
    // A Lease left by a killed run would make it wait for the Lease to expire.
    await cluster.admin.delete(LEASES, { namespace: GO_OPERATOR_NS, name: GO_OPERATOR_LEASE }).catch(() => undefined);
    kubeconfig ??= await serviceAccountKubeconfig(cluster, GO_OPERATOR_SERVICE_ACCOUNT, GO_OPERATOR_NS);
    const operator = await ControllerProcess.start('go-website-operator', binary, ({ metricsPort, healthPort }) => [
      `--kubeconfig=${kubeconfig}`,
      `--namespace=${GO_OPERATOR_NS}`,
      `--template=${template}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
      '--leader-elect',
    ]);
    try {
      await operator.leading(GO_OPERATOR_LEASE);
    } catch (error) {
      await operator.stop(0);
      throw error;
    }
    return operator;
  };
  return {
    title: `go-website-operator (controller-runtime ${CONTROLLER_RUNTIME_VERSION})`,
    description: `go-website-operator: bench/go-operator/main.go on controller-runtime ${CONTROLLER_RUNTIME_VERSION}, built by scripts/binaries.sh, run as ServiceAccount ${GO_OPERATOR_NS}/${GO_OPERATOR_SERVICE_ACCOUNT}, leader election on, at controller-runtime's defaults (1 worker, no client-side rate limit); the same Deployment and Service as renderWorkload() (checked on the cluster before the figures), finalizer, events and status as ours`,
    namespace: GO_OPERATOR_NS,
    user: serviceAccountUser(GO_OPERATOR_NS, GO_OPERATOR_SERVICE_ACCOUNT),
    queueWait: { metric: 'workqueue_queue_duration_seconds', labels: { name: 'website' } },
    async install(context) {
      const { cluster } = context;
      binary = await goOperatorBinary(context.log);
      await installOperatorObjects(cluster);
      await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
        input: goOperatorRbacManifests()
          .map((m) => JSON.stringify(m))
          .join('\n'),
      });
      template = join(await mkdtemp(join(tmpdir(), 'go-operator-')), 'template.json');
      await writeFile(template, JSON.stringify(goOperatorTemplate()));
      const operator = await start(context);
      try {
        await sameChildren(context).catch((error: Error) => {
          throw new Error(`${error.message}; its log:\n${operator.log.slice(-20).join('\n')}`);
        });
      } finally {
        await operator.stop();
      }
    },
    start,
    ...websiteCrdPeer(GO_OPERATOR_NS),
  };
}

/** The Go peer, also for `npm run bench -- --peer ./bench/go-operator.ts` (the module's default export). */
export default goOperatorPeer();
