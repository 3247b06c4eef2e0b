// bench/kro.ts's pure parts: the ResourceGraphDefinition derived from renderWorkload, the static
// ClusterRole read from kro's chart, and the readiness predicate. (That kro runs them as meant is
// `npm run bench:kro-check`, on a real cluster with the real kro.)

import {
  celTextColor,
  KRO_VERSION,
  kroRbacManifests,
  kroStaticRules,
  kroTemplates,
  kroWebsite,
  kroWebsiteReady,
  websiteRgd,
} from '../../harness/kro/kro.ts';
import { renderedKind, renderWorkload } from '../../operator/src/reconciler/render.ts';

describe('kro ResourceGraphDefinition', () => {
  test("its templates are renderWorkload's output with expressions for name, namespace, replicas and page; no owner references, managed by kro", () => {
    const { deployment, service } = kroTemplates();
    const ours = renderWorkload({
      apiVersion: 'web.example.com/v1',
      kind: 'Website',
      metadata: { name: 'n', namespace: 'ns', uid: 'u', generation: 1 },
      spec: { title: 't', replicas: 1, color: '#2196F3' },
    });
    expect(deployment.metadata).toEqual({
      name: 'website-${schema.metadata.name}',
      namespace: '${schema.metadata.namespace}',
      labels: {
        'app.kubernetes.io/name': 'website',
        'app.kubernetes.io/instance': '${schema.metadata.name}',
        'app.kubernetes.io/managed-by': 'kro',
      },
    });
    expect(service.metadata).toEqual(deployment.metadata);
    expect((deployment.spec as { replicas: unknown }).replicas).toBe('${schema.spec.replicas}');
    const env = (deployment.spec as any).template.spec.containers[0].env as Array<{ name: string; value: string }>;
    const page = env.find((e) => e.name === 'WEBSITE_HTML')!.value;
    expect(page).toContain('<h1 id="title">${schema.spec.title.replace("&", "&amp;")');
    expect(page).toContain(
      'body { background: ${schema.spec.color}; color: ${cel.bind(c, schema.spec.color.lowerAscii()',
    );
    // Everything else is ours verbatim: the image, probes, security context, volumes, the Service's ports.
    const oursContainer = (renderedKind(ours, 'Deployment').spec as any).template.spec.containers[0];
    const kroContainer = (deployment.spec as any).template.spec.containers[0];
    expect({ ...kroContainer, env: kroContainer.env.map((e: { name: string }) => e.name) }).toEqual({
      ...oursContainer,
      env: oursContainer.env.map((e: { name: string }) => e.name),
    });
    expect(kroContainer.env.find((e: { name: string }) => e.name === 'NGINX_CONF')).toEqual(
      oursContainer.env.find((e: { name: string }) => e.name === 'NGINX_CONF'),
    );
    expect((service.spec as any).ports).toEqual((renderedKind(ours, 'Service').spec as any).ports);
  });

  test('the text colour expression carries all 256 linear channel values as CEL doubles', () => {
    const list = /cel\.bind\(lin, \[([^\]]*)\]/.exec(celTextColor())![1].split(', ');
    expect(list).toHaveLength(256);
    expect(list[0]).toBe('0.0');
    expect(list[255]).toBe('1.0');
    expect(list.every((v) => /^\d\.\d+(e-\d+)?$/.test(v))).toBe(true);
  });

  test('defines websites.kro.run with our spec bounds, and Ready once the Deployment has rolled out', () => {
    const rgd = websiteRgd() as any;
    expect(rgd.spec.schema.kind).toBe('Website');
    expect(rgd.spec.schema.spec.replicas).toMatch(/^integer \| required=true minimum=1 maximum=5 /);
    expect(rgd.spec.schema.spec.color).toContain('default="#2196F3"');
    expect(rgd.spec.resources.map((r: { id: string }) => r.id)).toEqual(['deployment', 'service']);
    expect(rgd.spec.resources[0].readyWhen).toHaveLength(3);
    expect(kroWebsite('a', { title: 'T', replicas: 2, color: '#fff' })).toEqual({
      apiVersion: 'kro.run/v1alpha1',
      kind: 'Website',
      metadata: { name: 'a', namespace: 'kro-websites' },
      spec: { title: 'T', replicas: 2, color: '#fff' },
    });
  });
});

describe('kroWebsiteReady', () => {
  const website = (generation: number, conditions: unknown[]) => ({
    metadata: { name: 'a', generation },
    status: { conditions },
  });
  test("kro's Ready condition, for the current generation only", () => {
    expect(kroWebsiteReady(website(2, [{ type: 'Ready', status: 'True', observedGeneration: 2 }]))).toBe(true);
    expect(kroWebsiteReady(website(3, [{ type: 'Ready', status: 'True', observedGeneration: 2 }]))).toBe(false);
    expect(
      kroWebsiteReady(
        website(2, [
          { type: 'Ready', status: 'False', observedGeneration: 2 },
          { type: 'InstanceManaged', status: 'True', observedGeneration: 2 },
        ]),
      ),
    ).toBe(false);
    expect(kroWebsiteReady({ metadata: { name: 'a', generation: 1 } })).toBe(false);
  });
});

describe("kro's RBAC", () => {
  // The shape of kro's helm/templates/cluster-role.yaml (v0.9.4), shortened.
  const template = [
    'apiVersion: rbac.authorization.k8s.io/v1',
    'kind: ClusterRole',
    '{{ if eq .Values.rbac.mode "unrestricted" -}}',
    'rules:',
    '- apiGroups: ["*"]',
    '{{ else if eq .Values.rbac.mode "aggregation" -}}',
    'aggregationRule:',
    '  clusterRoleSelectors: []',
    '---',
    'apiVersion: rbac.authorization.k8s.io/v1',
    'kind: ClusterRole',
    'metadata:',
    '  labels:',
    '    {{- include "kro.labels" . | nindent 4 }}',
    '  name: {{ include "kro.fullname" . }}:controller:static',
    'rules:',
    '- apiGroups: [kro.run]',
    '  resources: [resourcegraphdefinitions]',
    '  verbs: [get, list, watch]',
    '{{- end }}',
  ].join('\n');

  test("reads the aggregation mode's static rules from the chart, and binds them and the Website rules to the ServiceAccount", () => {
    const rules = kroStaticRules(template);
    expect(rules).toEqual([
      { apiGroups: ['kro.run'], resources: ['resourcegraphdefinitions'], verbs: ['get', 'list', 'watch'] },
    ]);
    const manifests = kroRbacManifests(rules) as any[];
    expect(manifests.filter((m) => m.kind === 'ClusterRoleBinding').map((m) => m.subjects)).toEqual([
      [{ kind: 'ServiceAccount', name: 'kro', namespace: 'kro-system' }],
      [{ kind: 'ServiceAccount', name: 'kro', namespace: 'kro-system' }],
    ]);
    expect(manifests.find((m) => m.metadata.name === 'kro:controller:static').rules).toBe(rules);
    expect(JSON.stringify(manifests)).not.toContain('"*"');
  });

  test('says what to do when the chart has changed shape', () => {
    expect(() => kroStaticRules('kind: ClusterRole\nrules: []\n')).toThrow(
      `Update kroStaticRules for this kro version`,
    );
    expect(KRO_VERSION).toMatch(/^v\d+\.\d+\.\d+$/);
  });
});
