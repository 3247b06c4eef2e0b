import { App, Chart } from 'cdk8s';
import type { KubeObject } from '../controller/kube-api.ts';
import {
  type OwnedKind,
  ownedApiVersion,
  WEBSITE_OWNS,
  type WebsiteV1,
  WebsiteWorkload,
  type WebsiteWorkloadProps,
} from '../library.ts';

/** Everything of WebsiteWorkloadProps except the Website: fixed for the operator's lifetime. */
export type RenderOptions = Omit<WebsiteWorkloadProps, 'website'>;

/** One object a Website owns, as rendered, with the declaration of its kind. */
export interface RenderedChild {
  readonly owned: OwnedKind;
  readonly object: KubeObject;
}

/**
 * Every object a Website owns (WEBSITE_OWNS: its Deployment and Service, and its HTTPRoute when
 * `options.route` is given), rendered by the same construct `npm run synth` uses, as plain JSON,
 * in the order WEBSITE_OWNS declares their kinds. A fresh App per Website: nothing is
 * shared between Websites, nothing touches disk. Reusing one would save under 1 µs of the render:
 * almost all of it is cdk8s resolving, then copying and key-sorting, every field in toJson.
 */
export function renderWorkload(website: WebsiteV1, options: RenderOptions = {}): RenderedChild[] {
  const chart = new Chart(new App({ outdir: '/dev/null' }), 'website');
  new WebsiteWorkload(chart, 'workload', { ...options, website });
  const objects = chart.toJson() as KubeObject[];
  const undeclared = objects.filter((o) => !WEBSITE_OWNS.some((owned) => rendersAs(owned, o)));
  if (undeclared.length > 0)
    throw new Error(
      `WebsiteWorkload renders ${undeclared.map((o) => `${o.apiVersion} ${o.kind}`).join(', ')}, which WEBSITE_OWNS does not declare: declare the kind there, so that the operator watches, caches and may write it`,
    );
  return WEBSITE_OWNS.flatMap((owned) =>
    objects.filter((o) => rendersAs(owned, o)).map((object) => ({ owned, object })),
  );
}

/** The rendered object of one kind: the Deployment, say. */
export function renderedKind(children: readonly RenderedChild[], kind: string): KubeObject {
  const child = children.find((c) => c.owned.kind === kind);
  if (!child) throw new Error(`WebsiteWorkload rendered no ${kind}`);
  return child.object;
}

function rendersAs(owned: OwnedKind, object: KubeObject): boolean {
  return object.kind === owned.kind && object.apiVersion === ownedApiVersion(owned);
}
