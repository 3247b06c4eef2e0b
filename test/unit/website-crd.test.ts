import { type Manifest, only, synth } from '../../harness/manifests.ts';
import { COLOR_PATTERN, DEFAULT_COLOR, MAX_WEBSITE_NAME_LENGTH } from '../../lib/website/schema.ts';
import { WebsiteCrd, type WebsiteCrdProps } from '../../lib/website/website-crd.ts';

function crd(props?: WebsiteCrdProps): Manifest {
  return only(
    synth((chart) => new WebsiteCrd(chart, 'crd', props)),
    'CustomResourceDefinition',
  );
}

function version(manifest: Manifest, name: string): Manifest {
  const found = manifest.spec.versions.find((v: Manifest) => v.name === name);
  if (!found) throw new Error(`no version ${name}`);
  return found;
}

describe('WebsiteCrd', () => {
  const manifest = crd();
  const v1 = version(manifest, 'v1');
  const v1Spec = v1.schema.openAPIV3Schema.properties.spec;

  test('registers websites.web.example.com with the names of spec §2', () => {
    expect(manifest.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(manifest.metadata.name).toBe('websites.web.example.com');
    expect(manifest.spec.group).toBe('web.example.com');
    expect(manifest.spec.scope).toBe('Namespaced');
    expect(manifest.spec.names).toEqual({
      kind: 'Website',
      listKind: 'WebsiteList',
      plural: 'websites',
      singular: 'website',
      shortNames: ['ws'],
    });
  });

  test('serves v1 (storage) and v1beta1 (not stored, deprecated)', () => {
    expect(manifest.spec.versions.map((v: Manifest) => [v.name, v.served, v.storage])).toEqual([
      ['v1', true, true],
      ['v1beta1', true, false],
    ]);
    expect(version(manifest, 'v1beta1').deprecated).toBe(true);
    expect(version(manifest, 'v1beta1').deprecationWarning).toMatch(/use web\.example\.com\/v1/);
  });

  test('enables the status subresource on every version', () => {
    for (const v of manifest.spec.versions) expect(v.subresources).toEqual({ status: {} });
  });

  test('v1 requires title and replicas, bounds replicas to 1..5 and defaults color', () => {
    expect(v1.schema.openAPIV3Schema.required).toEqual(['spec']);
    expect(v1Spec.required).toEqual(['title', 'replicas']);
    expect(v1Spec.properties.replicas).toMatchObject({ type: 'integer', minimum: 1, maximum: 5 });
    expect(v1Spec.properties.title).toMatchObject({ type: 'string', minLength: 1 });
    expect(v1Spec.properties.color).toMatchObject({ type: 'string', default: DEFAULT_COLOR, pattern: COLOR_PATTERN });
    expect(DEFAULT_COLOR).toBe('#2196F3');
  });

  test('the colour pattern accepts CSS hex colours only', () => {
    const pattern = new RegExp(COLOR_PATTERN);
    for (const ok of ['#2196F3', '#fff', '#ABCDEF', '#000000']) expect(pattern.test(ok)).toBe(true);
    for (const bad of ['red', '2196F3', '#12', '#1234', '#GGGGGG', '#2196F3 ', 'rgb(0,0,0)'])
      expect(pattern.test(bad)).toBe(false);
  });

  test('every spec and status field has a description for kubectl explain', () => {
    const walk = (schema: Manifest, path: string): void => {
      if (path !== 'metadata') expect([path, typeof schema.description]).toEqual([path, 'string']);
      for (const [key, child] of Object.entries<Manifest>(schema.properties ?? {}))
        walk(child, path ? `${path}.${key}` : key);
      if (schema.items) walk(schema.items, `${path}[]`);
    };
    for (const v of manifest.spec.versions) {
      walk(v.schema.openAPIV3Schema.properties.spec, 'spec');
      walk(v.schema.openAPIV3Schema.properties.status, 'status');
    }
  });

  test('status has availableReplicas, url, observedGeneration and map-keyed conditions', () => {
    const status = v1.schema.openAPIV3Schema.properties.status;
    expect(Object.keys(status.properties).sort()).toEqual([
      'availableReplicas',
      'conditions',
      'observedGeneration',
      'url',
    ]);
    expect(status.properties.availableReplicas).toMatchObject({ type: 'integer', minimum: 0 });
    expect(status.properties.conditions['x-kubernetes-list-type']).toBe('map');
    expect(status.properties.conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(status.properties.conditions.items.required).toEqual([
      'type',
      'status',
      'lastTransitionTime',
      'reason',
      'message',
    ]);
  });

  test('CEL rules keep the name short enough for the website- prefix and titles non-blank', () => {
    const rules = v1.schema.openAPIV3Schema['x-kubernetes-validations'];
    expect(rules).toContainEqual({
      rule: `self.metadata.name.size() <= ${MAX_WEBSITE_NAME_LENGTH}`,
      fieldPath: '.metadata.name',
      message: expect.stringMatching(/metadata\.name must be at most 55 characters.*website-<name>/),
    });
    expect(MAX_WEBSITE_NAME_LENGTH).toBe(55);
    expect(rules.map((r: Manifest) => r.message)).toContainEqual(expect.stringMatching(/no '\.'/));
    expect(v1Spec.properties.title['x-kubernetes-validations']).toEqual([
      expect.objectContaining({
        rule: 'self.trim().size() > 0',
        message: expect.stringMatching(/^spec\.title must not be blank/),
      }),
    ]);
  });

  test('printer columns: Title, Replicas, Color, Age; Available and URL only with -o wide', () => {
    const columns = v1.additionalPrinterColumns.map((c: Manifest) => [c.name, c.type, c.jsonPath, c.priority ?? 0]);
    expect(columns).toEqual([
      ['Title', 'string', '.spec.title', 0],
      ['Replicas', 'integer', '.spec.replicas', 0],
      ['Color', 'string', '.spec.color', 0],
      ['Available', 'integer', '.status.availableReplicas', 1],
      ['URL', 'string', '.status.url', 1],
      ['Age', 'date', '.metadata.creationTimestamp', 0],
    ]);
  });

  test('v1beta1 has the older shape: heading, instances, theme.color', () => {
    const spec = version(manifest, 'v1beta1').schema.openAPIV3Schema.properties.spec;
    expect(spec.required).toEqual(['heading', 'instances']);
    expect(spec.properties.instances).toMatchObject({ type: 'integer', minimum: 1, maximum: 5 });
    expect(spec.properties.theme.properties.color).toMatchObject({ default: DEFAULT_COLOR, pattern: COLOR_PATTERN });
    expect(spec.properties.theme.default).toEqual({});
  });

  test('converts through the operator webhook Service at /convert', () => {
    expect(manifest.spec.conversion).toEqual({
      strategy: 'Webhook',
      webhook: {
        conversionReviewVersions: ['v1'],
        clientConfig: {
          service: { name: 'website-operator-webhook', namespace: 'website-system', path: '/convert', port: 443 },
        },
      },
    });
  });

  test('uses strategy None when v1beta1 is turned off', () => {
    const v1Only = crd({ versions: [{ name: 'v1', served: true, storage: true }] });
    expect(v1Only.spec.conversion).toEqual({ strategy: 'None' });
    expect(v1Only.spec.versions).toHaveLength(1);
    const unserved = crd({
      versions: [
        { name: 'v1', served: true, storage: true },
        { name: 'v1beta1', served: false, storage: false },
      ],
    });
    expect(unserved.spec.conversion).toEqual({ strategy: 'None' });
  });

  test('group, replica bounds and webhook Service are configurable', () => {
    const custom = crd({
      group: 'sites.acme.io',
      replicas: { maximum: 10 },
      conversionWebhook: { name: 'conv', namespace: 'ops', port: 8443 },
    });
    expect(custom.metadata.name).toBe('websites.sites.acme.io');
    expect(version(custom, 'v1').schema.openAPIV3Schema.properties.spec.properties.replicas).toMatchObject({
      minimum: 1,
      maximum: 10,
    });
    expect(version(custom, 'v1beta1').deprecationWarning).toContain('sites.acme.io/v1');
    expect(custom.spec.conversion.webhook.clientConfig.service).toEqual({
      name: 'conv',
      namespace: 'ops',
      path: '/convert',
      port: 8443,
    });
  });

  describe('misconfiguration fails at synth with what to change', () => {
    test.each<[string, WebsiteCrdProps, RegExp]>([
      [
        'no storage version',
        { versions: [{ name: 'v1', served: true, storage: false }] },
        /exactly one version must have storage: true, but none does/,
      ],
      [
        'two storage versions',
        {
          versions: [
            { name: 'v1', served: true, storage: true },
            { name: 'v1beta1', served: true, storage: true },
          ],
        },
        /exactly one version must have storage: true, but v1 and v1beta1 do/,
      ],
      [
        'inverted replica bounds',
        { replicas: { minimum: 5, maximum: 1 } },
        /replicas\.minimum \(5\) is greater than replicas\.maximum \(1\)/,
      ],
      ['fractional replica bound', { replicas: { maximum: 2.5 } }, /must be non-negative integers/],
      [
        'a group without a dot',
        { group: 'websites' },
        /group 'websites' must be a DNS subdomain with at least one dot/,
      ],
      [
        'an unserved storage version',
        { versions: [{ name: 'v1', served: false, storage: true }] },
        /storage version 'v1' must be served/,
      ],
      [
        'a duplicated version',
        {
          versions: [
            { name: 'v1', served: true, storage: true },
            { name: 'v1', served: true, storage: false },
          ],
        },
        /version 'v1' is listed more than once/,
      ],
    ])('%s', (_, props, message) => {
      expect(() => crd(props)).toThrow(message);
      expect(() => crd(props)).toThrow(/^WebsiteCrd at 'test\/crd': /);
    });
  });
});
