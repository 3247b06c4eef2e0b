// What a Website owns as a template: renderWorkload()'s Deployment and Service (the construct our
// operator renders with) for placeholder values, with another controller's own markers where our
// operator substitutes a Website's. The benchmark's peers write the same objects from it: kro's
// ResourceGraphDefinition (harness/kro/kro.ts, CEL expressions) and the Go peer
// (harness/go-operator/go-operator.ts, strings its program replaces).
import { DEFAULT_COLOR } from '../../lib/website/schema.ts';
import { pageHtml, textColorOn } from '../../lib/workload/page.ts';
import type { KubeObject } from '../../operator/src/controller/kube-api.ts';
import { renderedKind, renderWorkload } from '../../operator/src/reconciler/render.ts';

/** What the template holds where renderWorkload puts a Website's values. */
export interface TemplateMarkers {
  readonly name: string;
  readonly namespace: string;
  /** In the owner reference. */
  readonly uid: string;
  /** The page: the title as HTML-escaped text, the background and the text colour (lib/workload/page.ts). */
  readonly text: string;
  readonly background: string;
  readonly foreground: string;
  /** The Deployment's spec.replicas. */
  readonly replicas: unknown;
}

/** Values no real Website has, rendered through renderWorkload and then replaced by the markers. */
const PLACEHOLDER = {
  name: 'placeholder-website-name',
  namespace: 'placeholder-website-ns',
  uid: 'placeholder-website-uid',
  title: 'placeholder-website-title',
  replicas: 3,
  color: DEFAULT_COLOR,
};

/** Replaces every occurrence of `from` in the strings of `value`, recursively. */
export function replaceStrings(value: unknown, from: string, to: string): unknown {
  if (typeof value === 'string') return value.split(from).join(to);
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, from, to));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, from, to)]));
  return value;
}

/** The Deployment and Service renderWorkload renders, with `markers` where a Website's values go. */
export function workloadTemplates(markers: TemplateMarkers): { deployment: KubeObject; service: KubeObject } {
  const p = PLACEHOLDER;
  const rendered = renderWorkload({
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name: p.name, namespace: p.namespace, uid: p.uid, generation: 1 },
    spec: { title: p.title, replicas: p.replicas, color: p.color },
  });
  const html = pageHtml({ text: p.title, background: p.color, foreground: textColorOn(p.color) });
  const markedHtml = pageHtml({ text: markers.text, background: markers.background, foreground: markers.foreground });
  const convert = (object: KubeObject): KubeObject => {
    let out: unknown = replaceStrings(object, html, markedHtml);
    // The namespace first: the name's placeholder is not part of it, but the other way round it would be.
    out = replaceStrings(out, p.namespace, markers.namespace);
    out = replaceStrings(out, p.name, markers.name);
    out = replaceStrings(out, p.uid, markers.uid);
    return out as KubeObject;
  };
  const deployment = convert(renderedKind(rendered, 'Deployment'));
  const spec = deployment.spec as { replicas: unknown };
  if (spec.replicas !== p.replicas)
    throw new Error(
      `renderWorkload's Deployment has no spec.replicas ${p.replicas}: update workloadTemplates for its new shape`,
    );
  spec.replicas = markers.replicas;
  const service = convert(renderedKind(rendered, 'Service'));
  const leftover = JSON.stringify({ deployment, service }).match(/placeholder-website-\w+/);
  if (leftover)
    throw new Error(
      `renderWorkload's output still holds ${leftover[0]} after conversion: update workloadTemplates for its new shape`,
    );
  return { deployment, service };
}
