import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { CLUSTER_ENV, KUBECONFIG, KUBECTL, ROOT } from './env.ts';

const kubectl = (args: string[], input?: string) =>
  execFileSync(KUBECTL, ['--kubeconfig', KUBECONFIG, ...args], { input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] }).toString();

/**
 * The garbage collector learns about a new CRD on its discovery resync (every 30 s in
 * kube-controller-manager). Until then it cannot see that a Website is gone and leaves its
 * dependents alone, so wait until it demonstrably collects one.
 */
function waitForGarbageCollector(timeoutMs = 120_000): void {
  const ns = 'gc-probe';
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
  kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'web.example.com/v1', kind: 'Website', metadata: { name: 'probe', namespace: ns }, spec: { title: 'GC probe', replicas: 1 } }));
  const uid = kubectl(['get', 'website', 'probe', '-n', ns, '-o', 'jsonpath={.metadata.uid}']);
  kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'probe', namespace: ns, ownerReferences: [{ apiVersion: 'web.example.com/v1', kind: 'Website', name: 'probe', uid }] },
  }));
  kubectl(['delete', 'website', 'probe', '-n', ns]);
  const start = Date.now();
  while (kubectl(['get', 'configmap', '-n', ns, '--field-selector=metadata.name=probe', '-o', 'name']).trim() !== '') {
    if (Date.now() - start > timeoutMs) throw new Error('the garbage collector did not collect a Website dependent within 120 s');
    execFileSync('sleep', ['0.5']);
  }
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  console.log(`[cluster] garbage collector watches Websites (${((Date.now() - start) / 1000).toFixed(1)} s)`);
}

/** One real cluster per test run: start it (or reuse a healthy one), install the CRD from dist/. */
export default function globalSetup(): void {
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'up'], { env: CLUSTER_ENV, stdio: 'inherit' });
  kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(ROOT, 'dist/website-operator/website-crd.yaml')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/websites.web.example.com']);
  waitForGarbageCollector();
}
