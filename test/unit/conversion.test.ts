import fc from 'fast-check';
import { ConversionError, convertWebsite, v1beta1ToV1, v1ToV1beta1 } from '../../lib/website/conversion.ts';
import { DEFAULT_COLOR } from '../../lib/website/schema.ts';
import type { ObjectMeta, WebsiteStatus, WebsiteV1, WebsiteV1beta1 } from '../../lib/website/types.ts';

const group = 'web.example.com';

// Valid objects as the API server holds them: defaults applied, so colour is always present.
const color = fc.oneof(
  fc.stringMatching(/^#[0-9a-fA-F]{6}$/),
  fc.stringMatching(/^#[0-9a-fA-F]{3}$/),
  fc.constant(DEFAULT_COLOR),
);
const title = fc.string({ minLength: 1, maxLength: 200, unit: 'grapheme' }).filter((s) => s.trim().length > 0);
const replicas = fc.integer({ min: 1, max: 5 });
const metadata: fc.Arbitrary<ObjectMeta> = fc.record(
  {
    name: fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/),
    namespace: fc.stringMatching(/^[a-z]{1,10}$/),
    uid: fc.uuid(),
    generation: fc.nat(),
    resourceVersion: fc.nat().map(String),
    labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.string({ maxLength: 10 })),
    annotations: fc.dictionary(fc.stringMatching(/^[a-z./]{1,12}$/), fc.string({ maxLength: 30 })),
    finalizers: fc.constant([`websites.${group}/cleanup`]),
  },
  { requiredKeys: ['name', 'namespace'] },
);
const status: fc.Arbitrary<WebsiteStatus> = fc.record(
  {
    availableReplicas: fc.integer({ min: 0, max: 5 }),
    url: fc.webUrl(),
    observedGeneration: fc.nat(),
    conditions: fc.array(
      fc.record({
        type: fc.constant('Ready'),
        status: fc.constantFrom('True' as const, 'False' as const, 'Unknown' as const),
        lastTransitionTime: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        reason: fc.constantFrom('Available', 'Progressing', 'ReconcileFailed'),
        message: fc.string(),
      }),
      { maxLength: 1 },
    ),
  },
  { requiredKeys: [] },
);

const websiteV1: fc.Arbitrary<WebsiteV1> = fc.record(
  {
    apiVersion: fc.constant(`${group}/v1`),
    kind: fc.constant('Website' as const),
    metadata,
    spec: fc.record({ title, replicas, color }),
    status,
  },
  { requiredKeys: ['apiVersion', 'kind', 'metadata', 'spec'] },
);
const websiteV1beta1: fc.Arbitrary<WebsiteV1beta1> = fc.record(
  {
    apiVersion: fc.constant(`${group}/v1beta1`),
    kind: fc.constant('Website' as const),
    metadata,
    spec: fc.record({ heading: title, instances: replicas, theme: fc.record({ color }) }),
    status,
  },
  { requiredKeys: ['apiVersion', 'kind', 'metadata', 'spec'] },
);

describe('Website conversion', () => {
  test('v1 -> v1beta1 -> v1 is lossless', () => {
    fc.assert(fc.property(websiteV1, (w) => expect(v1beta1ToV1(v1ToV1beta1(w))).toEqual(w)));
  });

  test('v1beta1 -> v1 -> v1beta1 is lossless', () => {
    fc.assert(fc.property(websiteV1beta1, (w) => expect(v1ToV1beta1(v1beta1ToV1(w))).toEqual(w)));
  });

  test('renames the fields, keeps metadata untouched and carries status', () => {
    fc.assert(
      fc.property(websiteV1beta1, (w) => {
        const v1 = v1beta1ToV1(w);
        expect(v1.apiVersion).toBe(`${group}/v1`);
        expect(v1.spec).toEqual({ title: w.spec.heading, replicas: w.spec.instances, color: w.spec.theme!.color });
        expect(v1.metadata).toBe(w.metadata);
        expect(v1.status).toBe(w.status);
      }),
    );
  });

  test('adds the colour default going to v1', () => {
    const old: WebsiteV1beta1 = {
      apiVersion: `${group}/v1beta1`,
      kind: 'Website',
      metadata: { name: 'a' },
      spec: { heading: 'A', instances: 2 },
    };
    expect(v1beta1ToV1(old).spec).toEqual({ title: 'A', replicas: 2, color: '#2196F3' });
  });

  test('does not mutate its input', () => {
    fc.assert(
      fc.property(websiteV1, (w) => {
        const before = structuredClone(w);
        convertWebsite(w, `${group}/v1beta1`);
        expect(w).toEqual(before);
      }),
    );
  });

  test('convertWebsite converts both ways, and to the same version is the identity', () => {
    fc.assert(
      fc.property(websiteV1, (w) => {
        expect(convertWebsite(w, `${group}/v1`)).toBe(w);
        expect(convertWebsite(convertWebsite(w, `${group}/v1beta1`), `${group}/v1`)).toEqual(w);
      }),
    );
  });

  test('convertWebsite honours a configured group', () => {
    const w = {
      apiVersion: 'sites.acme.io/v1beta1',
      kind: 'Website',
      metadata: { name: 'a' },
      spec: { heading: 'A', instances: 1 },
    };
    expect(convertWebsite(w, 'sites.acme.io/v1', 'sites.acme.io').apiVersion).toBe('sites.acme.io/v1');
    expect(() => convertWebsite(w, `${group}/v1`)).toThrow(
      /apiVersion 'sites.acme.io\/v1beta1': expected web\.example\.com\/v1/,
    );
  });

  test.each<[string, unknown, string, RegExp]>([
    ['a non-object', 'x', `${group}/v1`, /not a JSON object/],
    [
      'another kind',
      { apiVersion: `${group}/v1`, kind: 'Pod', metadata: { name: 'p' }, spec: {} },
      `${group}/v1beta1`,
      /object 'p' has kind 'Pod'/,
    ],
    [
      'an unknown target version',
      { apiVersion: `${group}/v1`, kind: 'Website', spec: { title: 'a', replicas: 1 } },
      `${group}/v2`,
      /desiredAPIVersion 'web.example.com\/v2'/,
    ],
    [
      'a missing spec',
      { apiVersion: `${group}/v1`, kind: 'Website', metadata: { name: 'w' } },
      `${group}/v1beta1`,
      /Website 'w' has no spec/,
    ],
    [
      'a v1beta1 object without heading',
      { apiVersion: `${group}/v1beta1`, kind: 'Website', spec: { instances: 1 } },
      `${group}/v1`,
      /needs spec\.heading/,
    ],
    [
      'a v1 object without replicas',
      { apiVersion: `${group}/v1`, kind: 'Website', spec: { title: 'x' } },
      `${group}/v1beta1`,
      /needs spec\.title \(string\) and spec\.replicas/,
    ],
  ])('rejects %s with a ConversionError', (_, object, to, message) => {
    expect(() => convertWebsite(object, to)).toThrow(ConversionError);
    expect(() => convertWebsite(object, to)).toThrow(message);
  });
});
