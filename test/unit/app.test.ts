import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { buildApp, SYNC_WAVES } from '../../lib/app.ts';
import type { Manifest } from '../helpers.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

function readDir(dir: string): Record<string, Manifest[]> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((file) => [file, parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => d.toJS())]),
  );
}

describe('the synthesized app', () => {
  const charts = Object.fromEntries(buildApp({ outdir: '/nonexistent' }).charts.map((c) => [c.node.id, c.toJson() as Manifest[]]));

  test('has one chart per concern with stable names', () => {
    expect(Object.keys(charts).sort()).toEqual([
      'tracing-dev',
      'tracing-production-cassandra',
      'tracing-production-elasticsearch',
      'website-crd',
      'website-operator',
      'website-samples',
      'website-shell-operator',
    ]);
  });

  test('committed dist/ is exactly what the charts synthesize', () => {
    const dist = readDir(join(root, 'dist'));
    expect(Object.keys(dist)).toEqual(Object.keys(charts).sort().map((id) => `${id}.yaml`));
    for (const [id, objects] of Object.entries(charts)) expect(dist[`${id}.yaml`]).toEqual(objects);
  });

  test('Argo CD applies the CRD, then the operator, then the Websites', () => {
    const waves = (id: string) => new Set(charts[id].map((m) => m.metadata.annotations['argocd.argoproj.io/sync-wave']));
    expect(waves('website-crd')).toEqual(new Set([String(SYNC_WAVES.crd)]));
    expect(waves('website-operator')).toEqual(new Set([String(SYNC_WAVES.operator)]));
    expect(waves('website-shell-operator')).toEqual(new Set([String(SYNC_WAVES.operator)]));
    expect(waves('website-samples')).toEqual(new Set([String(SYNC_WAVES.samples)]));
    expect(SYNC_WAVES.crd).toBeLessThan(SYNC_WAVES.operator);
    expect(SYNC_WAVES.operator).toBeLessThan(SYNC_WAVES.samples);
    for (const website of charts['website-samples']) {
      expect(website.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('SkipDryRunOnMissingResource=true');
    }
  });

  test('sample Websites are v1 objects in the namespace the operator watches', () => {
    const crd = charts['website-crd'][0];
    const operatorNamespace = charts['website-operator'].find((m) => m.kind === 'Namespace')!.metadata.name;
    expect(charts['website-samples'].length).toBeGreaterThanOrEqual(2);
    for (const website of charts['website-samples']) {
      expect(website.apiVersion).toBe(`${crd.spec.group}/v1`);
      expect(website.kind).toBe(crd.spec.names.kind);
      expect(website.metadata.namespace).toBe(operatorNamespace);
      expect(website.spec.replicas).toBeGreaterThanOrEqual(1);
      expect(website.spec.replicas).toBeLessThanOrEqual(5);
    }
  });

  test('`cdk8s synth` writes the same files as `npm run synth`', () => {
    const out = mkdtempSync(join(tmpdir(), 'cdk8s-synth-'));
    try {
      execFileSync(join(root, 'node_modules/.bin/cdk8s'), ['synth', '--output', out], { cwd: root, stdio: 'pipe' });
      expect(readDir(out)).toEqual(readDir(join(root, 'dist')));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
