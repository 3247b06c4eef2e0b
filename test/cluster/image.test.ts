// The operator image without a Docker engine: scripts/image-tree.sh assembles the tree the
// Dockerfile copies into the image (compiled package, production dependencies only), and the
// compiled entrypoint, started from that folder, reconciles a Website as the operator's ServiceAccount.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './env.ts';
import { eventually, getJson, kubectl, ok, website } from './kube.ts';
import { operatorRbacManifests } from '../../scripts/operator-process.ts';
import { OPERATOR_NS as NS, OperatorProcess, serviceAccountKubeconfig } from './operator-process.ts';

let tree: string;
let operator: OperatorProcess | undefined;
beforeAll(async () => {
  tree = mkdtempSync(join(tmpdir(), 'image-tree-'));
  execFileSync('bash', [join(ROOT, 'scripts/image-tree.sh'), tree], { stdio: 'inherit' });
  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: operatorRbacManifests().map((m) => JSON.stringify(m)).join('\n') });
  await kubectl(['delete', 'lease', 'website-operator', '-n', NS, '--ignore-not-found']);
}, 300_000);
afterAll(async () => {
  await operator?.kill();
  await kubectl(['patch', 'website', 'image-tree', '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  await kubectl(['delete', 'website', 'image-tree', '-n', NS, '--ignore-not-found']);
  rmSync(tree, { recursive: true, force: true });
});

describe('the operator image tree', () => {
  test('holds the compiled package and production dependencies only', () => {
    expect(readdirSync(tree).sort()).toEqual(['build', 'node_modules', 'package.json']);
    expect(existsSync(join(tree, 'build/lib/bin/operator.js'))).toBe(true);
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    for (const name of Object.keys(dependencies)) expect(existsSync(join(tree, 'node_modules', name))).toBe(true);
    // The lockfile marks what only development needs (TypeScript, jest, the Node 22 package, ...).
    const { packages } = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
    const devOnly = Object.entries(packages as Record<string, { dev?: boolean }>).filter(([path, entry]) => path && entry.dev).map(([path]) => path);
    expect(devOnly).toEqual(expect.arrayContaining(['node_modules/typescript', 'node_modules/jest', 'node_modules/node']));
    expect(devOnly.filter((path) => existsSync(join(tree, path)))).toEqual([]);
  });

  test('its compiled entrypoint, started from the tree, reconciles a Website', async () => {
    operator = await OperatorProcess.start('op-image', await serviceAccountKubeconfig(), {}, join(tree, 'build/lib/bin/operator.js'));
    await ok(['apply', '-f', '-'], { input: JSON.stringify(website('image-tree', NS, { title: 'From the image tree', replicas: 1 })) });
    const ready = await eventually('the Website to be Ready', async () => {
      const current = await getJson(['website', 'image-tree', '-n', NS]);
      return current.status?.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'True');
    });
    expect(ready.message).toBe('1/1 replicas available');
    expect(await operator.stop()).toBe(0);
  });
});
