import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-34';
import { parseAllDocuments } from 'yaml';
import type { Manifest } from '../../harness/manifests.ts';
import { buildDist, DIST_ALTERNATIVES, SYNC_WAVES, TRACING_SYNC_WAVES } from '../../lib/app.ts';
import { ArgoSync } from '../../lib/argocd.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every file under `dir`, by path relative to it (`<unit>/<chart>.yaml`), parsed. */
function readDir(dir: string): Record<string, Manifest[]> {
  return Object.fromEntries(
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => !statSync(join(dir, file)).isDirectory())
      .sort()
      .map((file) => [file, parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((d) => d.toJS())]),
  );
}

describe('the synthesized app', () => {
  const units = buildDist('/nonexistent');
  /** Every chart's objects by `<unit>/<chart>`, the path of its file under dist/ without `.yaml`. */
  const charts = Object.fromEntries(
    Object.entries(units).flatMap(([unit, app]) =>
      app.charts.map((c) => [`${unit}/${c.node.id}`, c.toJson() as Manifest[]]),
    ),
  );

  test('has one folder per deployable unit and one file per chart, with stable names', () => {
    expect(Object.keys(charts).sort()).toEqual([
      'tracing-dev/tracing-dev',
      'tracing-production-cassandra/tracing-production-cassandra',
      'tracing-production-elasticsearch/tracing-production-elasticsearch',
      'website-operator/website-crd',
      'website-operator/website-operator',
      'website-samples/website-samples',
      'website-shell-operator/website-crd',
      'website-shell-operator/website-shell-operator',
    ]);
    for (const [unit, app] of Object.entries(units)) expect(app.outdir).toBe(join('/nonexistent', unit));
  });

  test('each group of alternatives names units of dist/, each in one group at most', () => {
    const named = DIST_ALTERNATIVES.flat();
    expect(new Set(named).size).toBe(named.length);
    for (const unit of named) expect(Object.keys(units)).toContain(unit);
  });

  test('both operator units carry the very same CRD (switching between them keeps it)', () => {
    expect(charts['website-shell-operator/website-crd']).toEqual(charts['website-operator/website-crd']);
  });

  test('committed dist/ is exactly what the charts synthesize', () => {
    const dist = readDir(join(root, 'dist'));
    expect(Object.keys(dist)).toEqual(
      Object.keys(charts)
        .sort()
        .map((id) => `${id}.yaml`),
    );
    for (const [id, objects] of Object.entries(charts)) expect(dist[`${id}.yaml`]).toEqual(objects);
  });

  test('Argo CD applies the CRD, then the operator, then the Websites', () => {
    const waves = (id: string) =>
      new Set(charts[id].map((m) => m.metadata.annotations['argocd.argoproj.io/sync-wave']));
    expect(waves('website-operator/website-crd')).toEqual(new Set([String(SYNC_WAVES.crd)]));
    expect(waves('website-shell-operator/website-crd')).toEqual(new Set([String(SYNC_WAVES.crd)]));
    expect(waves('website-operator/website-operator')).toEqual(new Set([String(SYNC_WAVES.operator)]));
    expect(waves('website-shell-operator/website-shell-operator')).toEqual(new Set([String(SYNC_WAVES.operator)]));
    expect(waves('website-samples/website-samples')).toEqual(new Set([String(SYNC_WAVES.samples)]));
    expect(SYNC_WAVES.crd).toBeLessThan(SYNC_WAVES.operator);
    expect(SYNC_WAVES.operator).toBeLessThan(SYNC_WAVES.samples);
    for (const website of charts['website-samples/website-samples']) {
      expect(website.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('SkipDryRunOnMissingResource=true');
    }
  });

  test('every object in every committed dist/ file carries a sync wave', () => {
    const dist = readDir(join(root, 'dist'));
    for (const [file, objects] of Object.entries(dist)) {
      for (const m of objects)
        expect([file, m.kind, m.metadata.name, m.metadata.annotations?.['argocd.argoproj.io/sync-wave']]).toEqual([
          file,
          m.kind,
          m.metadata.name,
          expect.stringMatching(/^-?\d+$/),
        ]);
    }
  });

  test.each([
    'tracing-dev/tracing-dev',
    'tracing-production-elasticsearch/tracing-production-elasticsearch',
    'tracing-production-cassandra/tracing-production-cassandra',
  ])(
    '%s: namespace, configuration, Services and NetworkPolicies, then Jaeger, then the Collector, then HotROD, then scaling',
    (id) => {
      const wave = (kind: string, name: string) =>
        Number(
          charts[id].find((m) => m.kind === kind && m.metadata.name === name)?.metadata.annotations[
            'argocd.argoproj.io/sync-wave'
          ],
        );
      const w = TRACING_SYNC_WAVES;
      expect(w.config).toBeLessThan(w.jaeger);
      expect(w.jaeger).toBeLessThan(w.collector);
      expect(w.collector).toBeLessThan(w.hotrod);
      expect(w.hotrod).toBeLessThan(w.scaling);
      for (const m of charts[id]) {
        const expected = ['Namespace', 'ConfigMap', 'Service', 'NetworkPolicy'].includes(m.kind)
          ? w.config
          : ['HorizontalPodAutoscaler', 'PodDisruptionBudget'].includes(m.kind)
            ? w.scaling
            : m.metadata.name === 'otel-collector'
              ? w.collector
              : m.metadata.name === 'hotrod'
                ? w.hotrod
                : w.jaeger;
        expect([m.kind, m.metadata.name, wave(m.kind, m.metadata.name)]).toEqual([m.kind, m.metadata.name, expected]);
      }
    },
  );

  test('synth refuses an object without a sync wave, naming it', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'no-wave-')) });
    ArgoSync.requireWaves(app);
    const waved = new Chart(app, 'waved');
    new k8s.KubeConfigMap(waved, 'a', { metadata: { name: 'a' } });
    ArgoSync.apply(waved, { wave: 0 });
    new k8s.KubeConfigMap(new Chart(app, 'forgotten'), 'b', { metadata: { name: 'b' } });
    try {
      expect(() => app.synth()).toThrow(
        /ConfigMap 'b' \(forgotten\/b\) has no argocd\.argoproj\.io\/sync-wave annotation/,
      );
    } finally {
      rmSync(app.outdir, { recursive: true, force: true });
    }
  });

  test('sample Websites are v1 objects in the namespace the operator watches', () => {
    const crd = charts['website-operator/website-crd'][0];
    const operatorNamespace = charts['website-operator/website-operator'].find((m) => m.kind === 'Namespace')!.metadata
      .name;
    expect(
      charts['website-shell-operator/website-shell-operator'].find((m) => m.kind === 'Namespace')!.metadata.name,
    ).toBe(operatorNamespace);
    expect(charts['website-samples/website-samples'].length).toBeGreaterThanOrEqual(2);
    for (const website of charts['website-samples/website-samples']) {
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
