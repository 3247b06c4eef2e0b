import { App, Chart } from 'cdk8s';

/** A Kubernetes object as synthesized: plain JSON. */
export type Manifest = Record<string, any>;

/** Synthesizes whatever `build` adds to a fresh chart, in memory (nothing touches disk). */
export function synth(build: (chart: Chart) => void): Manifest[] {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), 'test');
  build(chart);
  return chart.toJson();
}

/** The one object of `kind` (and `name`, when given) among `manifests`; fails when not exactly one. */
export function only(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata?.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` '${name}'` : ''}, found ${found.length}`);
  return found[0];
}
