// Starting and stopping the tests' local clusters (scripts/cluster.sh), for every project's global
// setup and teardown.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { eventually } from '../process/poll.ts';
import { ROOT, type TestCluster } from './env.ts';
import { kubectlOk } from './kubectl.ts';

/**
 * The garbage collector learns about a new CRD on its discovery resync (every 30 s in
 * kube-controller-manager). Until then it cannot see that a Website is gone and leaves its
 * dependents alone, so wait until it demonstrably collects one.
 */
async function waitForGarbageCollector(kubectl: Kubectl, timeoutMs = 120_000): Promise<void> {
  const ns = 'gc-probe';
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'web.example.com/v1',
      kind: 'Website',
      metadata: { name: 'probe', namespace: ns },
      spec: { title: 'GC probe', replicas: 1 },
    }),
  );
  const uid = await kubectl(['get', 'website', 'probe', '-n', ns, '-o', 'jsonpath={.metadata.uid}']);
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'probe',
        namespace: ns,
        ownerReferences: [{ apiVersion: 'web.example.com/v1', kind: 'Website', name: 'probe', uid }],
      },
    }),
  );
  await kubectl(['delete', 'website', 'probe', '-n', ns]);
  const start = Date.now();
  await eventually(
    'the garbage collector to collect a Website dependent',
    async () =>
      (await kubectl(['get', 'configmap', '-n', ns, '--field-selector=metadata.name=probe', '-o', 'name'])).trim() ===
      '',
    { timeoutMs, intervalMs: 500, stopOnError: true },
  );
  await kubectl(['delete', 'namespace', ns, '--wait=false']);
  console.log(`[cluster] garbage collector watches Websites (${((Date.now() - start) / 1000).toFixed(1)} s)`);
}

type Kubectl = (args: string[], input?: string) => Promise<string>;

/** Starts `cluster` (or reuses a healthy one) and installs the CRD from dist/. */
export async function startTestCluster(cluster: TestCluster): Promise<void> {
  const kubectl: Kubectl = (args, input) => kubectlOk(cluster, args, { input });
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'up'], { env: cluster.env, stdio: 'inherit' });
  await kubectl([
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(ROOT, 'dist/website-operator/website-crd.yaml'),
  ]);
  await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/websites.web.example.com']);
  await waitForGarbageCollector(kubectl);
}

/** Stops `cluster`, unless KEEP_CLUSTER=1 asks to keep it for the next run. */
export function stopTestCluster(cluster: TestCluster): void {
  if (process.env.KEEP_CLUSTER === '1') return;
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'down'], { env: cluster.env, stdio: 'inherit' });
}
