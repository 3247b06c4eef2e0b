// `npm run argocd:up` / `npm run argocd:down`: Argo CD Core (harness/argocd/argocd.ts) against the
// local cluster of `npm run cluster:up`, serving this checkout's git repository (its committed
// branches) on loopback, with the Website health check in argocd-cm. Writes .argocd/env:
// ARGOCD_REPO_URL (the repoURL of an Application) and ARGOCD_NAMESPACE.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ARGOCD_NAMESPACE, startArgoCd } from '../harness/argocd/argocd.ts';
import { kubectlOk } from '../harness/cluster/kubectl.ts';
import { stopProcesses } from '../harness/process/processes.ts';
import { ArgoSync } from '../lib/argocd.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STATE = process.env.WEBSITE_STACK_ARGOCD_DIR ?? join(ROOT, '.argocd');
const PIDS = join(STATE, 'pids.json');
const CLUSTER_DIR = process.env.WEBSITE_STACK_CLUSTER_DIR ?? join(ROOT, '.cluster');
const cluster = { kubeconfig: join(CLUSTER_DIR, 'kubeconfig'), kubectl: join(CLUSTER_DIR, 'bin', 'kubectl') };

const log = (message: string) => process.stderr.write(`[argocd] ${message}\n`);

async function down(): Promise<void> {
  if (!existsSync(PIDS)) {
    log(`not running (no ${PIDS})`);
    return;
  }
  await stopProcesses(JSON.parse(readFileSync(PIDS, 'utf8')));
  rmSync(PIDS);
  rmSync(join(STATE, 'env'), { force: true });
  log(`stopped; Argo CD's objects (namespace ${ARGOCD_NAMESPACE}, its CRDs, your Applications) stay in the cluster`);
}

async function up(): Promise<void> {
  if (existsSync(PIDS)) await down();
  // The cluster first (reused when it runs); its output tells how to reach it.
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'up'], { stdio: 'inherit' });
  execFileSync('bash', [join(ROOT, 'scripts/system-deps.sh'), 'argocd'], { stdio: 'inherit' }); // Redis, from Debian
  mkdirSync(STATE, { recursive: true });
  const argocd = await startArgoCd({ cluster, dir: join(STATE, 'run'), repository: ROOT, detached: true });
  writeFileSync(PIDS, `${JSON.stringify(argocd.pids, null, 2)}\n`);
  // The health check of docs/use/dist-and-argocd.md (lib/argocd.ts), so Websites show their real health.
  await kubectlOk(cluster, [
    'patch',
    'configmap',
    'argocd-cm',
    '-n',
    ARGOCD_NAMESPACE,
    '--type',
    'merge',
    '-p',
    JSON.stringify({ data: ArgoSync.websiteHealthCheck() }),
  ]);
  for (const [name, file] of Object.entries(argocd.logs)) log(`${name} is up (pid ${argocd.pids[name]}, log ${file})`);
  const text = `ARGOCD_REPO_URL=${argocd.repoUrl}\nARGOCD_NAMESPACE=${argocd.namespace}\n`;
  writeFileSync(join(STATE, 'env'), text);
  process.stdout.write(text);
  log(
    `written to ${join(STATE, 'env')}. Apply the ApplicationSet of docs/use/dist-and-argocd.md with repoURL: ${argocd.repoUrl}, then watch it: ` +
      `${cluster.kubectl} --kubeconfig ${cluster.kubeconfig} get applications -n ${ARGOCD_NAMESPACE} -w`,
  );
}

const command = process.argv[2];
if (command === 'up') await up();
else if (command === 'down') await down();
else {
  process.stderr.write('usage: node scripts/argocd.ts up|down\n');
  process.exit(2);
}
