// Where a single create's time goes: operator debug logs with timestamps beside the bench's watch.
import { DEPLOYMENTS, type KubeObject } from '../operator/src/controller/kube-client.ts';
import { OPERATOR_NS, OperatorProcess, serviceAccountKubeconfig } from '../scripts/operator-process.ts';
import { Watcher, clusterUp, installOperatorObjects } from '../bench/cluster.ts';
import { websitesType } from '../operator/src/reconciler/website.ts';

const log = (m: string) => process.stderr.write(`${new Date().toISOString()} ${m}\n`);
const cluster = await clusterUp({ pods: 200, extraArgs: [], log });
await installOperatorObjects(cluster);
const kubeconfig = await serviceAccountKubeconfig(cluster);
const op = await OperatorProcess.start('lat', kubeconfig, { LOG_LEVEL: 'debug', NODE_ENV: 'production', CONCURRENCY: process.env.CONC ?? '4' });
await new Promise((r) => setTimeout(r, 5000));
const deployments = new Watcher(cluster.admin, DEPLOYMENTS, OPERATOR_NS);
await deployments.synced();
const ws = websitesType('web.example.com');
for (let i = 0; i < 8; i++) {
  const name = `lat-${Date.now() % 100000}-${i}`;
  const t0 = performance.now();
  const mark = op.logs.length;
  await cluster.admin.create(ws, { apiVersion: 'web.example.com/v1', kind: 'Website', metadata: { name, namespace: OPERATOR_NS }, spec: { title: 't', replicas: 1 } } as KubeObject);
  const t1 = performance.now();
  while (!deployments.firstSeen.has(`website-${name}`)) await new Promise((r) => setTimeout(r, 2));
  const t2 = deployments.firstSeen.get(`website-${name}`)! - t0;
  log(`${name}: create answered ${(t1 - t0).toFixed(1)} ms, Deployment seen ${t2.toFixed(1)} ms`);
  for (const l of op.logs.slice(mark)) log(`   op ${l.time} ${l.msg} ${l.kind ?? ''} ${l.website ?? ''}`);
  await new Promise((r) => setTimeout(r, 1000));
}
await op.stop();
await deployments.stop();
process.exit(0);
