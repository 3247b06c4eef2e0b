import { type Manifest, only, synth } from '../helpers.ts';
import { WebsiteOperator, type WebsiteOperatorProps } from '../../lib/operator/website-operator.ts';

function operator(props?: WebsiteOperatorProps): Manifest[] {
  return synth((chart) => new WebsiteOperator(chart, 'op', props));
}

// Spec §5, "Role rules of the operator", row by row.
const specRoleRules = [
  { apiGroups: ['web.example.com'], resources: ['websites', 'websites/status'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
];

describe('WebsiteOperator', () => {
  const manifests = operator();
  const deployment = only(manifests, 'Deployment', 'website-operator');
  const pod = deployment.spec.template.spec;
  const container = only(pod.containers.map((c: Manifest) => ({ ...c, kind: 'Container' })), 'Container');

  test('creates a namespace that enforces Pod Security restricted', () => {
    expect(only(manifests, 'Namespace').metadata).toEqual({
      name: 'website-system',
      labels: {
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/audit': 'restricted',
        'pod-security.kubernetes.io/warn': 'restricted',
      },
    });
    expect(operator({ createNamespace: false }).some((m) => m.kind === 'Namespace')).toBe(false);
  });

  test("the Role holds spec §5's rules, plus Leases for leader election", () => {
    const role = only(manifests, 'Role', 'website-operator');
    expect(role.metadata.namespace).toBe('website-system');
    expect(role.rules.slice(0, 4)).toEqual(specRoleRules);
    expect(role.rules.slice(4)).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['website-operator'], verbs: ['get', 'update'] },
    ]);
  });

  test('without leader election the Role is exactly the spec table', () => {
    const role = only(operator({ leaderElection: false }), 'Role');
    expect(role.rules).toEqual(specRoleRules);
  });

  test('the Role follows a configured group', () => {
    const role = only(operator({ group: 'sites.acme.io' }), 'Role');
    expect(role.rules[0].apiGroups).toEqual(['sites.acme.io']);
  });

  test('binds the Role to the dedicated ServiceAccount under stable names', () => {
    expect(only(manifests, 'ServiceAccount').metadata.name).toBe('website-operator');
    const binding = only(manifests, 'RoleBinding');
    expect(binding.metadata.name).toBe('website-operator');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'website-operator' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'website-operator', namespace: 'website-system' }]);
    expect(pod.serviceAccountName).toBe('website-operator');
    expect(pod.automountServiceAccountToken).toBe(true);
  });

  test('runs one replica of a pinned image', () => {
    expect(deployment.spec.replicas).toBe(1);
    expect(container.image).toMatch(/^[^:@]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(container.image).not.toMatch(/:latest$/);
    expect(only(operator({ image: 'registry.acme.io/website-operator:1.2.3' }), 'Deployment').spec.template.spec.containers[0].image).toBe(
      'registry.acme.io/website-operator:1.2.3',
    );
  });

  test('pod and container pass Pod Security restricted', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.hostNetwork ?? false).toBe(false);
    expect(pod.volumes ?? []).toEqual([]);
  });

  test('probes /healthz and /readyz, and names the metrics, health and webhook ports', () => {
    expect(container.ports).toEqual([
      { name: 'metrics', containerPort: 8080, protocol: 'TCP' },
      { name: 'health', containerPort: 8081, protocol: 'TCP' },
      { name: 'webhook', containerPort: 9443, protocol: 'TCP' },
    ]);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
  });

  test('sets resources deliberately: requests and a memory limit', () => {
    expect(container.resources).toEqual({ requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } });
  });

  test('passes the group, namespace, pod name and leader election to the runtime', () => {
    const env = Object.fromEntries(container.env.map((e: Manifest) => [e.name, e.value ?? e.valueFrom.fieldRef.fieldPath]));
    expect(env).toEqual({
      WEBSITE_GROUP: 'web.example.com',
      OPERATOR_NAMESPACE: 'metadata.namespace',
      POD_NAME: 'metadata.name',
      LEADER_ELECTION: 'true',
      LEASE_NAME: 'website-operator',
    });
    const traced = only(operator({ otlpEndpoint: 'http://otel-collector.observability:4318' }), 'Deployment');
    expect(traced.spec.template.spec.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.observability:4318' },
        { name: 'OTEL_SERVICE_NAME', value: 'website-operator' },
      ]),
    );
  });

  test('the webhook Service maps 443 to the pod port 9443 and selects the operator pods', () => {
    const service = only(manifests, 'Service', 'website-operator-webhook');
    expect(service.spec.ports).toEqual([{ name: 'webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }]);
    expect(container.ports.find((p: Manifest) => p.name === 'webhook').containerPort).toBe(9443);
    expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    expect(deployment.spec.selector.matchLabels).toEqual(service.spec.selector);
  });

  test('refuses several replicas without leader election', () => {
    expect(() => operator({ replicas: 2, leaderElection: false })).toThrow(/2 replicas without leader election/);
    expect(() => operator({ replicas: 0 })).toThrow(/replicas must be a positive integer/);
    expect(only(operator({ replicas: 2 }), 'Deployment').spec.replicas).toBe(2);
  });
});
