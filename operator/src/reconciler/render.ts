import { App, Chart } from 'cdk8s';
import type { KubeObject } from '../controller/kube-client.ts';
import { type WebsiteV1, WebsiteWorkload, type WebsiteWorkloadProps } from '../library.ts';

/** Everything of WebsiteWorkloadProps except the Website: fixed for the operator's lifetime. */
export type RenderOptions = Omit<WebsiteWorkloadProps, 'website'>;

/**
 * The Deployment and Service a Website owns, rendered by the same construct `npm run synth` uses,
 * as plain JSON. A fresh App per Website: nothing is shared between Websites, nothing touches disk.
 * Reusing one would save under 1 µs of the render: almost all of it is cdk8s resolving, then
 * copying and key-sorting, every field in toJson.
 */
export function renderWorkload(
  website: WebsiteV1,
  options: RenderOptions = {},
): { deployment: KubeObject; service: KubeObject } {
  const chart = new Chart(new App({ outdir: '/dev/null' }), 'website');
  const workload = new WebsiteWorkload(chart, 'workload', { ...options, website });
  return { deployment: workload.deployment.toJson() as KubeObject, service: workload.service.toJson() as KubeObject };
}
