// The kro (kubernetes-sigs/kro) definitions the benchmark's kro peer (bench/kro.ts) installs and the
// unit tests check: its pinned version, its RBAC, and a ResourceGraphDefinition that expresses our
// Website → Deployment + Service in kro's terms, derived from renderWorkload() (the construct our
// operator renders with), so both controllers write the same Deployment and Service.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { COLOR_PATTERN, DEFAULT_COLOR, DEFAULT_REPLICA_BOUNDS, MAX_TITLE_LENGTH } from '../../lib/website/schema.ts';
import { escapeHtml, linearChannel } from '../../lib/workload/page.ts';
import type { KubeObject, ResourceType } from '../../operator/src/controller/kube-api.ts';
import type { WebsiteSpec } from '../cluster/website.ts';
import { replaceStrings, workloadTemplates } from '../operator/workload-template.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The kro release under test: scripts/binaries.sh's KRO_VERSION, the one place it is pinned. */
export const KRO_VERSION = (() => {
  const match = /^KRO_VERSION=(\S+)$/m.exec(readFileSync(join(ROOT, 'scripts/binaries.sh'), 'utf8'));
  if (!match) throw new Error('KRO_VERSION is not set in scripts/binaries.sh');
  return match[1];
})();
export const KRO_MODULE = 'github.com/kubernetes-sigs/kro';

/** Where kro's controller runs from: its ServiceAccount, its leader-election Lease. */
export const KRO_NS = 'kro-system';
export const KRO_SERVICE_ACCOUNT = 'kro';
/** Where the benchmark creates kro Websites (kept apart from the website operator's). */
export const KRO_WEBSITES_NS = 'kro-websites';
/** kro's LeaderElectionID (cmd/controller/main.go). */
export const KRO_LEASE = 'controller.kro.run';

/** The ResourceGraphDefinition's name and the API it defines: websites.kro.run, kro's default group. */
export const RGD_NAME = 'website';
export const RGD_TYPE: ResourceType = { group: 'kro.run', version: 'v1alpha1', resource: 'resourcegraphdefinitions' };
export const KRO_WEBSITES: ResourceType = { group: 'kro.run', version: 'v1alpha1', resource: 'websites' };

// ---------------------------------------------------------------------------------------------
// RBAC and the ResourceGraphDefinition.

/**
 * The rules of kro's least-privilege ClusterRole (`<release>:controller:static`, the chart's
 * `rbac.mode: aggregation`): RGDs, GraphRevisions, CRDs, ConfigMaps, Leases, Events. Read from the
 * chart's template, whose only template actions in that document are the name and labels.
 */
export function kroStaticRules(clusterRoleTemplate: string): Array<Record<string, unknown>> {
  const branch = clusterRoleTemplate
    .split(/\{\{ else if eq \.Values\.rbac\.mode "aggregation" -\}\}/)[1]
    ?.split(/\{\{-? end \}\}/)[0];
  const document = branch
    ?.split(/^---$/m)
    .map(
      (text) =>
        parse(
          text
            .split('\n')
            .filter((line) => !line.includes('{{'))
            .join('\n'),
        ) as { kind?: string; rules?: Array<Record<string, unknown>> } | null,
    )
    .find((doc) => doc?.kind === 'ClusterRole' && doc.rules);
  if (!document?.rules)
    throw new Error(
      "kro's helm/templates/cluster-role.yaml has no aggregation-mode ClusterRole with rules: has the chart changed? Update kroStaticRules for this kro version",
    );
  return document.rules;
}

const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/**
 * kro's identity on the bench cluster: ServiceAccount kro-system/kro, bound to kro's own static
 * ClusterRole and to one more that grants exactly what this RGD needs (the chart's aggregation
 * mode asks users for that second role; its default, `unrestricted`, grants `*` on everything).
 * Cluster-wide: kro watches instances and children in every namespace.
 */
export function kroRbacManifests(staticRules: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const subjects = [{ kind: 'ServiceAccount', name: KRO_SERVICE_ACCOUNT, namespace: KRO_NS }];
  const roles = {
    'kro:controller:static': staticRules,
    'kro:controller:website': [
      { apiGroups: ['kro.run'], resources: ['websites'], verbs: ALL_VERBS },
      { apiGroups: ['kro.run'], resources: ['websites/status'], verbs: ['get', 'patch', 'update'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ALL_VERBS },
      { apiGroups: [''], resources: ['services'], verbs: ALL_VERBS },
    ],
  };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KRO_NS } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: KRO_SERVICE_ACCOUNT, namespace: KRO_NS } },
    ...Object.entries(roles).flatMap(([name, rules]) => [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects,
      },
    ]),
  ];
}

// ---------------------------------------------------------------------------------------------
// The ResourceGraphDefinition.

/** A CEL double literal (CEL has no implicit int → double: 0 must be written 0.0). */
function celDouble(value: number): string {
  const text = String(value);
  return /[.e]/.test(text) ? text : `${text}.0`;
}

/** A CEL string literal in double quotes (the only quotes kro's `${…}` scanner understands). */
function celString(text: string): string {
  return JSON.stringify(text);
}

/** `schema.spec.title`, HTML-escaped exactly as escapeHtml does it ('&' first, so nothing is escaped twice). */
function celEscapedTitle(): string {
  return [...'&<>"\''].reduce(
    (expr, c) => `${expr}.replace(${celString(c)}, ${celString(escapeHtml(c))})`,
    'schema.spec.title',
  );
}

/**
 * The page's text colour from `schema.spec.color`, as textColorOn computes it: WCAG relative
 * luminance from the same 256 precomputed linear channel values (CEL has no pow), in the same
 * order of operations, so every colour gets the same black or white, bit for bit.
 */
export function celTextColor(): string {
  const linear = `[${Array.from({ length: 256 }, (_, i) => celDouble(linearChannel(i))).join(', ')}]`;
  const digit = (at: number) => `"0123456789abcdef".indexOf(h.charAt(${at}))`;
  const channel = (i: number) => `lin[${digit(2 * i)} * 16 + ${digit(2 * i + 1)}]`;
  return (
    'cel.bind(c, schema.spec.color.lowerAscii(), ' +
    'cel.bind(h, size(c) == 4 ? c.charAt(1) + c.charAt(1) + c.charAt(2) + c.charAt(2) + c.charAt(3) + c.charAt(3) : c.substring(1), ' +
    `cel.bind(lin, ${linear}, ` +
    `cel.bind(l, 0.2126 * ${channel(0)} + 0.7152 * ${channel(1)} + 0.0722 * ${channel(2)}, ` +
    // Contrast against white is (1.05)/(L+0.05), against black (L+0.05)/0.05: pick the larger.
    '1.05 / (l + 0.05) >= (l + 0.05) / 0.05 ? "#ffffff" : "#000000"))))'
  );
}

/**
 * The Deployment and Service templates (harness/operator/workload-template.ts), with kro's
 * expressions where our operator substitutes the Website's. Two differences, both kro's way: no
 * ownerReferences (kro tracks children by ApplySet labels and deletes them itself, in reverse
 * dependency order, before it drops the instance's finalizer), and `app.kubernetes.io/managed-by:
 * kro` (kro sets that label on children anyway).
 */
export function kroTemplates(): { deployment: KubeObject; service: KubeObject } {
  const templates = workloadTemplates({
    name: '${schema.metadata.name}',
    namespace: '${schema.metadata.namespace}',
    uid: '${schema.metadata.uid}',
    text: `\${${celEscapedTitle()}}`,
    background: '${schema.spec.color}',
    foreground: `\${${celTextColor()}}`,
    replicas: '${schema.spec.replicas}',
  });
  const convert = (object: KubeObject): KubeObject => {
    const { ownerReferences: _owners, ...metadata } = object.metadata!;
    return replaceStrings({ ...object, metadata }, 'website-operator', 'kro') as KubeObject;
  };
  return { deployment: convert(templates.deployment), service: convert(templates.service) };
}

/**
 * The ResourceGraphDefinition `website`: kind Website in kro.run/v1alpha1 (websites.kro.run, apart
 * from our websites.web.example.com), spec.title / replicas (1–5) / color (default #2196F3) with our
 * CRD's bounds, expanding to Deployment and Service `website-<name>`. The Deployment is ready as
 * bench/cluster.ts's deploymentAvailable and our Ready condition have it: current template rolled out
 * and spec.replicas pods available; kro's Ready condition waits for it. Status: availableReplicas
 * and url, as ours.
 */
export function websiteRgd(): KubeObject {
  const { deployment, service } = kroTemplates();
  const { minimum, maximum } = DEFAULT_REPLICA_BOUNDS;
  return {
    apiVersion: 'kro.run/v1alpha1',
    kind: 'ResourceGraphDefinition',
    metadata: { name: RGD_NAME },
    spec: {
      schema: {
        apiVersion: KRO_WEBSITES.version,
        kind: 'Website',
        spec: {
          title: `string | required=true minLength=1 maxLength=${MAX_TITLE_LENGTH} description="Title shown on the website, as plain text: it is HTML-escaped before it reaches the page."`,
          replicas: `integer | required=true minimum=${minimum} maximum=${maximum} description="Number of pods serving the website, from ${minimum} to ${maximum}."`,
          color: `string | default="${DEFAULT_COLOR}" pattern="${COLOR_PATTERN}" description="Theme (background) colour of the page, a CSS hex colour: #RGB or #RRGGBB."`,
        },
        status: {
          availableReplicas: '${deployment.status.?availableReplicas.orValue(0)}',
          url: 'http://${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local',
        },
      },
      resources: [
        {
          id: 'deployment',
          template: deployment,
          readyWhen: [
            '${deployment.status.?observedGeneration.orValue(0) >= deployment.metadata.generation}',
            '${deployment.status.?updatedReplicas.orValue(0) >= deployment.spec.replicas}',
            '${deployment.status.?availableReplicas.orValue(0) >= deployment.spec.replicas}',
          ],
        },
        { id: 'service', template: service },
      ],
    },
  };
}

/** A kro Website as the benchmark creates it. */
export function kroWebsite(name: string, spec: WebsiteSpec, namespace = KRO_WEBSITES_NS): KubeObject {
  return {
    apiVersion: `${KRO_WEBSITES.group}/${KRO_WEBSITES.version}`,
    kind: 'Website',
    metadata: { name, namespace },
    spec: { title: spec.title, replicas: spec.replicas, color: spec.color },
  };
}

export interface Condition {
  type: string;
  status: string;
  observedGeneration?: number;
}

/** kro's Ready condition is True for the instance's current generation (its children ready, status written). */
export function kroWebsiteReady(website: KubeObject): boolean {
  const conditions = (website.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  return conditions.some(
    (c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === website.metadata?.generation,
  );
}
