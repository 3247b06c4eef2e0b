import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Chart } from 'cdk8s';
import {
  expectPodRunsAsBoundServiceAccount,
  expectPodSecurityRestricted,
  type Manifest,
  only,
  synth,
} from '../../harness/manifests.ts';
import {
  DEFAULT_OPERATOR_IMAGE,
  nodeOptionsFor,
  OPERATOR_MALLOC_ARENA_MAX,
  OPERATOR_NODE_FLAGS,
  OPERATOR_V8_FLAGS,
  OperatorDeployment,
} from '../../lib/operator/operator-deployment.ts';
import { webhookCrdRules, webhookSecretRules } from '../../lib/operator/operator-rbac.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { WebsiteOperator, type WebsiteOperatorProps } from '../../lib/operator/website-operator.ts';
import { WebsiteCrd, type WebsiteCrdProps } from '../../lib/website/website-crd.ts';
import { tracingSettings } from '../../operator/src/observability/tracing.ts';

function operator(props?: WebsiteOperatorProps): Manifest[] {
  return synth((chart) => new WebsiteOperator(chart, 'op', props));
}

// Spec §5, "Role rules of the operator", row by row.
const specRoleRules = [
  {
    apiGroups: ['web.example.com'],
    resources: ['websites', 'websites/status'],
    verbs: ['get', 'list', 'watch', 'update', 'patch'],
  },
  {
    apiGroups: ['apps'],
    resources: ['deployments'],
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
  { apiGroups: [''], resources: ['events'], verbs: ['create'] },
];
const leaseRules = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: ['website-operator'],
    verbs: ['get', 'update'],
  },
];
// Built-in webhook certificates: the one Secret (create cannot be limited by name) and the one CRD.
const secretRules = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  {
    apiGroups: [''],
    resources: ['secrets'],
    resourceNames: ['website-operator-webhook-tls'],
    verbs: ['get', 'update'],
  },
];
const crdRules = [
  {
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    resourceNames: ['websites.web.example.com'],
    verbs: ['get', 'patch'],
  },
];

describe('WebsiteOperator', () => {
  const manifests = operator();
  const deployment = only(manifests, 'Deployment', 'website-operator');
  const pod = deployment.spec.template.spec;
  const container = only(
    pod.containers.map((c: Manifest) => ({ ...c, kind: 'Container' })),
    'Container',
  );

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

  test("the Role holds spec §5's rules, plus Leases for leader election and the webhook Secret", () => {
    const role = only(manifests, 'Role', 'website-operator');
    expect(role.metadata.namespace).toBe('website-system');
    expect(role.rules).toEqual([...specRoleRules, ...leaseRules, ...secretRules]);
    expect(webhookSecretRules()).toEqual(secretRules);
  });

  test('a ClusterRole allows get and patch of the Website CRD only, bound to the ServiceAccount', () => {
    const clusterRole = only(manifests, 'ClusterRole');
    expect(clusterRole.metadata.name).toBe('website-operator-webhook-website-system');
    expect(clusterRole.metadata.namespace).toBeUndefined();
    expect(clusterRole.rules).toEqual(crdRules);
    expect(webhookCrdRules()).toEqual(crdRules);
    const binding = only(manifests, 'ClusterRoleBinding');
    expect(binding.metadata.name).toBe('website-operator-webhook-website-system');
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'website-operator-webhook-website-system',
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'website-operator', namespace: 'website-system' },
    ]);
    // Cluster-scoped names carry the namespace, so two installations do not collide.
    expect(only(operator({ namespace: 'sites' }), 'ClusterRole').metadata.name).toBe('website-operator-webhook-sites');
  });

  test('without leader election and with cert-manager certificates the Role is exactly the spec table, and there is no ClusterRole', () => {
    expect(only(operator({ leaderElection: false }), 'Role').rules).toEqual([...specRoleRules, ...secretRules]);
    const manifests = operator({ leaderElection: false, webhookCertificates: 'cert-manager' });
    expect(only(manifests, 'Role').rules).toEqual(specRoleRules);
    expect(manifests.filter((m) => m.kind.startsWith('Cluster'))).toEqual([]);
  });

  test('the Role and ClusterRole follow a configured group', () => {
    const manifests = operator({ group: 'sites.acme.io' });
    expect(only(manifests, 'Role').rules[0].apiGroups).toEqual(['sites.acme.io']);
    expect(only(manifests, 'ClusterRole').rules[0].resourceNames).toEqual(['websites.sites.acme.io']);
  });

  test('binds the Role to the dedicated ServiceAccount under stable names', () => {
    expect(only(manifests, 'ServiceAccount').metadata.name).toBe('website-operator');
    expect(only(manifests, 'RoleBinding').metadata.name).toBe('website-operator');
    expectPodRunsAsBoundServiceAccount(manifests, pod, 'website-operator');
  });

  test('runs one replica of a pinned image', () => {
    expect(deployment.spec.replicas).toBe(1);
    expect(container.image).toMatch(/^[^:@]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(container.image).not.toMatch(/:latest$/);
    expect(
      only(operator({ image: 'registry.acme.io/website-operator:1.2.3' }), 'Deployment').spec.template.spec
        .containers[0].image,
    ).toBe('registry.acme.io/website-operator:1.2.3');
  });

  test('pod and container pass Pod Security restricted', () => {
    expectPodSecurityRestricted(pod);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
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

  test("sizes resources for its capacity, 5000 Websites by default: requests, a memory limit, V8's old generation capped below it", () => {
    expect(container.resources).toEqual({ requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } });
    expect(container.env).toContainEqual({
      name: 'NODE_OPTIONS',
      value: '--max-old-space-size=128 --max-semi-space-size=1',
    });
    expect(container.env).toContainEqual({ name: 'MALLOC_ARENA_MAX', value: OPERATOR_MALLOC_ARENA_MAX });
    expect(container.env).toContainEqual({ name: 'WEBSITE_CAPACITY', value: '5000' });
    const deploymentOf = (props: Parameters<typeof operator>[0]) => only(operator(props), 'Deployment');
    const envOf = (d: Manifest) =>
      Object.fromEntries(d.spec.template.spec.containers[0].env.map((e: Manifest) => [e.name, e.value]));

    // A capacity sizes them: twice the live heap the benchmark measured per Website, plus what Node needs outside it.
    const large = deploymentOf({ capacity: 20_000 });
    expect(large.spec.template.spec.containers[0].resources).toEqual({
      requests: { cpu: '100m', memory: '272Mi' },
      limits: { memory: '544Mi' },
    });
    expect(envOf(large)).toMatchObject({
      NODE_OPTIONS: '--max-old-space-size=416 --max-semi-space-size=1',
      WEBSITE_CAPACITY: '20000',
    });
    expect(OperatorDeployment.resourcesFor(1000).memoryLimit).toBe('256Mi');

    // Resources alone: the capacity is what their limit holds.
    const custom = deploymentOf({ resources: { cpuRequest: '200m', memoryRequest: '256Mi', memoryLimit: '1Gi' } });
    expect(envOf(custom)).toMatchObject({
      NODE_OPTIONS: '--max-old-space-size=896 --max-semi-space-size=1',
      WEBSITE_CAPACITY: '44952',
    });
    expect(OperatorDeployment.capacityFor('1Gi')).toBe(44952);
    for (const capacity of [1, 999, 5000, 12_345, 100_000])
      expect(
        OperatorDeployment.capacityFor(OperatorDeployment.resourcesFor(capacity).memoryLimit),
      ).toBeGreaterThanOrEqual(capacity);

    // Both: the limit must hold the capacity.
    expect(
      envOf(
        deploymentOf({
          capacity: 8000,
          resources: { cpuRequest: '100m', memoryRequest: '256Mi', memoryLimit: '512Mi' },
        }),
      ),
    ).toMatchObject({ WEBSITE_CAPACITY: '8000' });
    expect(() =>
      operator({ capacity: 20_000, resources: { cpuRequest: '100m', memoryRequest: '256Mi', memoryLimit: '512Mi' } }),
    ).toThrow(
      /memory limit 512Mi holds about 18473 Websites, not the capacity 20000: give it at least 544Mi, or leave resources out/,
    );
    expect(() => operator({ capacity: 0 })).toThrow(/capacity is a whole number of Websites, at least 1; got 0/);
    expect(() => operator({ resources: { cpuRequest: '100m', memoryRequest: '128Mi', memoryLimit: '128Mi' } })).toThrow(
      /memory limit 128Mi is too small: .* at least 192Mi/,
    );
    expect(() => operator({ resources: { cpuRequest: '100m', memoryRequest: '128Mi', memoryLimit: 'lots' } })).toThrow(
      /'lots' is not a memory quantity/,
    );
  });

  test('the capacity table of docs/operate/capacity.md is what OperatorDeployment.resourcesFor gives', () => {
    const page = readFileSync(fileURLToPath(new URL('../../docs/operate/capacity.md', import.meta.url)), 'utf8');
    const rows = [...page.matchAll(/^\| (\d+)(?: \(default\))? +\| (\d+Mi) +\| (\d+Mi) +\| (\d+) MiB +\|$/gm)];
    expect(rows.map((r) => Number(r[1]))).toEqual([1000, 5000, 10000, 20000]);
    for (const [, capacity, request, limit, heap] of rows) {
      const resources = OperatorDeployment.resourcesFor(Number(capacity));
      expect([resources.memoryRequest, resources.memoryLimit, nodeOptionsFor(resources.memoryLimit)]).toEqual([
        request,
        limit,
        `--max-old-space-size=${heap} ${OPERATOR_V8_FLAGS}`,
      ]);
    }
  });

  test('passes the group, namespace, pod name and leader election to the runtime', () => {
    const env = Object.fromEntries(
      container.env.map((e: Manifest) => [e.name, e.value ?? e.valueFrom.fieldRef.fieldPath]),
    );
    expect(env).toEqual({
      WEBSITE_GROUP: 'web.example.com',
      OPERATOR_NAMESPACE: 'metadata.namespace',
      POD_NAME: 'metadata.name',
      LEADER_ELECTION: 'true',
      LEASE_NAME: 'website-operator',
      NODE_OPTIONS: '--max-old-space-size=128 --max-semi-space-size=1',
      MALLOC_ARENA_MAX: '2',
      WEBSITE_CAPACITY: '5000',
      WEBHOOK_CERT_MODE: 'operator',
      WEBHOOK_SECRET_NAME: 'website-operator-webhook-tls',
      WEBHOOK_SERVICE_NAME: 'website-operator-webhook',
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

  test('one replica carries the single-pod lint exemptions; stand-by replicas spread over nodes and zones instead', () => {
    const annotations = deployment.metadata.annotations;
    expect(annotations['polaris.fairwinds.com/deploymentMissingReplicas-exempt']).toBe('true');
    expect(annotations['ignore-check.kube-linter.io/env-var-secret']).toMatch(
      /WEBHOOK_SECRET_NAME holds the name of the Secret/,
    );
    expect(pod.affinity).toBeUndefined();
    const two = only(operator({ replicas: 2 }), 'Deployment');
    expect(two.metadata.annotations['polaris.fairwinds.com/deploymentMissingReplicas-exempt']).toBeUndefined();
    expect(
      two.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm
        .topologyKey,
    ).toBe('kubernetes.io/hostname');
    expect(two.spec.template.spec.topologySpreadConstraints[0].topologyKey).toBe('topology.kubernetes.io/zone');
  });
});

describe('WebsiteOperator watching other namespaces (watchNamespaces)', () => {
  const subjects = [{ kind: 'ServiceAccount', name: 'website-operator', namespace: 'website-system' }];
  const rbacOf = (manifests: Manifest[]) =>
    manifests
      .filter((m) => ['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind))
      .map((m) => `${m.kind} ${m.metadata.namespace ?? '(cluster)'}/${m.metadata.name}`)
      .sort();
  const watchEnv = (manifests: Manifest[]) =>
    only(manifests, 'Deployment').spec.template.spec.containers[0].env.find(
      (e: Manifest) => e.name === 'WATCH_NAMESPACE',
    );

  test("by default: the spec's single Role in the operator namespace, no WATCH_NAMESPACE", () => {
    const manifests = operator();
    expect(rbacOf(manifests)).toEqual([
      'ClusterRole (cluster)/website-operator-webhook-website-system',
      'ClusterRoleBinding (cluster)/website-operator-webhook-website-system',
      'Role website-system/website-operator',
      'RoleBinding website-system/website-operator',
    ]);
    expect(watchEnv(manifests)).toBeUndefined();
  });

  test('a list: a Role with exactly the Website rules and a RoleBinding to the ServiceAccount in each namespace; the Lease and Secret stay in the operator namespace', () => {
    const manifests = operator({ watchNamespaces: WatchNamespaces.of('team-a', 'team-b') });
    expect(rbacOf(manifests)).toEqual([
      'ClusterRole (cluster)/website-operator-webhook-website-system',
      'ClusterRoleBinding (cluster)/website-operator-webhook-website-system',
      'Role team-a/website-operator-website-system',
      'Role team-b/website-operator-website-system',
      'Role website-system/website-operator',
      'RoleBinding team-a/website-operator-website-system',
      'RoleBinding team-b/website-operator-website-system',
      'RoleBinding website-system/website-operator',
    ]);
    for (const namespace of ['team-a', 'team-b']) {
      const role = manifests.find((m) => m.kind === 'Role' && m.metadata.namespace === namespace)!;
      expect(role.rules).toEqual(specRoleRules);
      const binding = manifests.find((m) => m.kind === 'RoleBinding' && m.metadata.namespace === namespace)!;
      expect(binding.roleRef).toEqual({
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'website-operator-website-system',
      });
      expect(binding.subjects).toEqual(subjects);
    }
    // Not watched: its own namespace keeps only what leader election and the webhook need.
    expect(only(manifests, 'Role', 'website-operator').rules).toEqual([...leaseRules, ...secretRules]);
    expect(watchEnv(manifests)).toEqual({ name: 'WATCH_NAMESPACE', value: 'team-a,team-b' });
  });

  test('a list with the operator namespace: the Website rules join its Role there', () => {
    const manifests = operator({ watchNamespaces: WatchNamespaces.of('website-system', 'team-a') });
    expect(only(manifests, 'Role', 'website-operator').rules).toEqual([
      ...specRoleRules,
      ...leaseRules,
      ...secretRules,
    ]);
    expect(manifests.filter((m) => m.kind === 'Role').map((m) => m.metadata.namespace)).toEqual([
      'website-system',
      'team-a',
    ]);
    expect(watchEnv(manifests).value).toBe('website-system,team-a');
  });

  test('nothing needed in the operator namespace (no leader election, cert-manager, not watched): no Role there at all', () => {
    const manifests = operator({
      watchNamespaces: WatchNamespaces.of('team-a'),
      leaderElection: false,
      webhookCertificates: 'cert-manager',
    });
    expect(rbacOf(manifests)).toEqual([
      'Role team-a/website-operator-website-system',
      'RoleBinding team-a/website-operator-website-system',
    ]);
  });

  test('all namespaces: a ClusterRole with exactly the Website rules and its ClusterRoleBinding, no Role outside the operator namespace', () => {
    const manifests = operator({ watchNamespaces: WatchNamespaces.all(), group: 'sites.acme.io' });
    expect(rbacOf(manifests)).toEqual([
      'ClusterRole (cluster)/website-operator-webhook-website-system',
      'ClusterRole (cluster)/website-operator-website-system',
      'ClusterRoleBinding (cluster)/website-operator-webhook-website-system',
      'ClusterRoleBinding (cluster)/website-operator-website-system',
      'Role website-system/website-operator',
      'RoleBinding website-system/website-operator',
    ]);
    const clusterRole = only(manifests, 'ClusterRole', 'website-operator-website-system');
    expect(clusterRole.rules).toEqual(
      specRoleRules.map((rule) =>
        rule.resources[0] === 'websites' ? { ...rule, apiGroups: ['sites.acme.io'] } : rule,
      ),
    );
    const binding = only(manifests, 'ClusterRoleBinding', 'website-operator-website-system');
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'website-operator-website-system',
    });
    expect(binding.subjects).toEqual(subjects);
    expect(only(manifests, 'Role').rules).toEqual([...leaseRules, ...secretRules]);
    expect(watchEnv(manifests)).toEqual({ name: 'WATCH_NAMESPACE', value: '*' });
  });

  test("two installations watching the same namespace do not overwrite each other's grants", () => {
    const names = (namespace: string) =>
      operator({ namespace, watchNamespaces: WatchNamespaces.of('team-a') })
        .filter((m) => m.metadata.namespace === 'team-a')
        .map((m) => m.metadata.name);
    expect(names('sites-a')).toEqual(['website-operator-sites-a', 'website-operator-sites-a']);
    expect(names('sites-b')).toEqual(['website-operator-sites-b', 'website-operator-sites-b']);
  });
});

describe('WebsiteOperator with cert-manager certificates', () => {
  const manifests = operator({ webhookCertificates: 'cert-manager' });
  const certificates = manifests.filter((m) => m.apiVersion === 'cert-manager.io/v1');
  const pod = only(manifests, 'Deployment').spec.template.spec;
  const container = pod.containers[0];

  test('bootstraps a CA from a self-signed Issuer and issues the serving certificate from it', () => {
    expect(certificates.map((m) => [m.kind, m.metadata.name, m.metadata.namespace])).toEqual([
      ['Issuer', 'website-operator-webhook-selfsigned', 'website-system'],
      ['Certificate', 'website-operator-webhook-ca', 'website-system'],
      ['Issuer', 'website-operator-webhook-ca', 'website-system'],
      ['Certificate', 'website-operator-webhook', 'website-system'],
    ]);
    expect(only(certificates, 'Issuer', 'website-operator-webhook-selfsigned').spec).toEqual({ selfSigned: {} });
    expect(only(certificates, 'Certificate', 'website-operator-webhook-ca').spec).toEqual({
      isCA: true,
      commonName: 'website-operator-webhook-ca',
      secretName: 'website-operator-webhook-ca',
      duration: '87600h',
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Never' },
      issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: 'website-operator-webhook-selfsigned' },
    });
    expect(only(certificates, 'Issuer', 'website-operator-webhook-ca').spec).toEqual({
      ca: { secretName: 'website-operator-webhook-ca' },
    });
  });

  test('the serving Certificate covers the webhook Service names and writes the Secret the pod mounts', () => {
    expect(only(certificates, 'Certificate', 'website-operator-webhook').spec).toEqual({
      secretName: 'website-operator-webhook-tls',
      commonName: 'website-operator-webhook.website-system.svc',
      dnsNames: [
        'website-operator-webhook',
        'website-operator-webhook.website-system',
        'website-operator-webhook.website-system.svc',
        'website-operator-webhook.website-system.svc.cluster.local',
      ],
      usages: ['server auth', 'digital signature'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: 'website-operator-webhook-ca' },
    });
    expect(only(manifests, 'Service', 'website-operator-webhook').metadata.namespace).toBe('website-system');
  });

  test('mounts the Secret read-only (whole volume, refreshed on renewal) and tells the operator to read files', () => {
    expect(pod.volumes).toEqual([
      {
        name: 'webhook-tls',
        secret: {
          secretName: 'website-operator-webhook-tls',
          defaultMode: 0o440,
          items: [
            { key: 'tls.crt', path: 'tls.crt' },
            { key: 'tls.key', path: 'tls.key' },
          ],
        },
      },
    ]);
    expect(container.volumeMounts).toEqual([{ name: 'webhook-tls', mountPath: '/etc/webhook/tls', readOnly: true }]);
    const env = Object.fromEntries(
      container.env.filter((e: Manifest) => e.name.startsWith('WEBHOOK_')).map((e: Manifest) => [e.name, e.value]),
    );
    expect(env).toEqual({
      WEBHOOK_CERT_MODE: 'files',
      WEBHOOK_CERT_DIR: '/etc/webhook/tls',
      WEBHOOK_SECRET_NAME: 'website-operator-webhook-tls',
    });
    // The fsGroup makes the 0440 files readable by the non-root user.
    expect(pod.securityContext.fsGroup).toBe(pod.securityContext.runAsUser);
  });

  test('gives the CRD the cainjector annotation; operator mode adds none', () => {
    const crd = only(
      synth(
        (chart) =>
          new WebsiteCrd(chart, 'crd', {
            operator: new WebsiteOperator(chart, 'op', { webhookCertificates: 'cert-manager', namespace: 'sites' }),
          }),
      ),
      'CustomResourceDefinition',
    );
    expect(crd.metadata.annotations).toEqual({ 'cert-manager.io/inject-ca-from': 'sites/website-operator-webhook' });

    const builtIn = only(
      synth((chart) => new WebsiteCrd(chart, 'crd', { operator: new WebsiteOperator(chart, 'op') })),
      'CustomResourceDefinition',
    );
    expect(builtIn.metadata.annotations).toBeUndefined();
  });
});

test("the default image is fully qualified: the release workflow's image of this package's version", () => {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  expect(DEFAULT_OPERATOR_IMAGE).toBe(`ghcr.io/website-stack/website-operator:${version}`);
  const image = only(operator(), 'Deployment', 'website-operator').spec.template.spec.containers[0].image;
  expect(image).toBe(DEFAULT_OPERATOR_IMAGE);
});

describe('WebsiteCrd given its WebsiteOperator', () => {
  const crdFor = (props: WebsiteOperatorProps, crdProps: Omit<WebsiteCrdProps, 'operator'> = {}) =>
    only(
      synth(
        (chart) => new WebsiteCrd(chart, 'crd', { ...crdProps, operator: new WebsiteOperator(chart, 'op', props) }),
      ),
      'CustomResourceDefinition',
    );

  test("sends conversions to the operator's webhook Service in the operator's namespace", () => {
    const crd = crdFor({ namespace: 'sites' });
    expect(crd.spec.conversion.webhook.clientConfig.service).toEqual({
      name: 'website-operator-webhook',
      namespace: 'sites',
      port: 443,
      path: '/convert',
    });
    // The Service it names is the one the operator deploys, on that port.
    const service = only(operator({ namespace: 'sites' }), 'Service', 'website-operator-webhook');
    expect(service.metadata.namespace).toBe('sites');
    expect(service.spec.ports[0].port).toBe(443);
  });

  test("takes the operator's group", () => {
    const crd = crdFor({ group: 'sites.acme.io' });
    expect(crd.metadata.name).toBe('websites.sites.acme.io');
    expect(crd.spec.group).toBe('sites.acme.io');
  });

  test('keeps extra annotations beside the ones the operator needs', () => {
    const crd = crdFor({ webhookCertificates: 'cert-manager' }, { annotations: { team: 'web' } });
    expect(crd.metadata.annotations).toEqual({
      team: 'web',
      'cert-manager.io/inject-ca-from': 'website-system/website-operator-webhook',
    });
  });

  test('refuses a group, webhook Service or annotation that contradicts the operator', () => {
    expect(() => crdFor({ group: 'sites.acme.io' }, { group: 'web.example.com' })).toThrow(
      "WebsiteCrd at 'test/crd': group 'web.example.com' differs from the group 'sites.acme.io' of operator 'test/op': give both the same group, or leave the CRD's unset",
    );
    expect(() => crdFor({}, { conversionWebhook: { name: 'conv', namespace: 'ops' } })).toThrow(
      "set either operator or conversionWebhook, not both: operator 'test/op' already says where its webhook is (website-system/website-operator-webhook:443/convert)",
    );
    expect(() =>
      crdFor(
        { webhookCertificates: 'cert-manager' },
        { annotations: { 'cert-manager.io/inject-ca-from': 'other/cert' } },
      ),
    ).toThrow(
      "annotation 'cert-manager.io/inject-ca-from' is 'other/cert', but operator 'test/op' needs 'website-system/website-operator-webhook': remove it from annotations",
    );
  });

  test('a CRD not given the operator of its group in the same app fails at synth, naming both', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'crd-operator-')) });
    const chart = new Chart(app, 'platform');
    new WebsiteCrd(chart, 'crd', { group: 'sites.acme.io' });
    new WebsiteOperator(chart, 'operator', { group: 'sites.acme.io', namespace: 'sites' });
    expect(() => app.synth()).toThrow(
      "WebsiteCrd at 'platform/crd' sends conversions to website-system/website-operator-webhook:443/convert, but 'platform/operator' serves sites/website-operator-webhook:443/convert: pass the operator to the CRD (new WebsiteCrd(scope, id, { operator }))",
    );
  });

  test('an operator of another group, or none in the app, leaves the CRD alone', () => {
    const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'crd-operator-')) });
    const chart = new Chart(app, 'platform');
    new WebsiteCrd(chart, 'crd');
    new WebsiteOperator(chart, 'operator', { group: 'sites.acme.io', namespace: 'sites' });
    expect(() => app.synth()).not.toThrow();
  });
});

describe("the operator's own tracing settings (the standard OpenTelemetry environment)", () => {
  test('off without an OTLP endpoint, or with OTEL_SDK_DISABLED', () => {
    expect(tracingSettings({})).toBeUndefined();
    expect(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
  });

  test('on with an endpoint: every trace by default, as website-operator, exported every 5 s', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      serviceName: 'website-operator',
      samplingRatio: 1,
      scheduleDelayMs: 5000,
    });
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces',
        OTEL_SERVICE_NAME: 'ops',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
        OTEL_BSP_SCHEDULE_DELAY: '200',
      }),
    ).toEqual({
      serviceName: 'ops',
      samplingRatio: 0.1,
      scheduleDelayMs: 200,
    });
  });

  test('a bad value names the variable and what it takes', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(() => tracingSettings({ ...base, OTEL_TRACES_SAMPLER_ARG: '5' })).toThrow(
      /OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got '5'/,
    );
    expect(() => tracingSettings({ ...base, OTEL_TRACES_SAMPLER: 'always_on' })).toThrow(
      /OTEL_TRACES_SAMPLER=always_on is not supported: use parentbased_traceidratio/,
    );
    expect(() => tracingSettings({ ...base, OTEL_BSP_SCHEDULE_DELAY: 'soon' })).toThrow(
      /OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds/,
    );
  });
});

test("npm run operator runs the bundle with the image's Node flags, the Deployment's V8 flags and malloc arenas", () => {
  const scripts = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).scripts;
  expect(scripts.operator).toBe(
    `MALLOC_ARENA_MAX=\${MALLOC_ARENA_MAX:-${OPERATOR_MALLOC_ARENA_MAX}} node ${OPERATOR_NODE_FLAGS.join(' ')} ${OPERATOR_V8_FLAGS} operator/build/operator.mjs`,
  );
});

test("the image's entrypoint runs the bundle with OPERATOR_NODE_FLAGS", () => {
  const dockerfile = readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8');
  const entrypoint = JSON.parse(/^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)![1]);
  expect(entrypoint).toEqual(['node', ...OPERATOR_NODE_FLAGS, '/app/operator.mjs']);
});
