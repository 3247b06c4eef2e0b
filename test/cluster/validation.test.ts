import { createNamespace, deleteNamespace, getJson, kubectl, ok, website } from '../../harness/cluster/kube.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('validation');
});
afterAll(() => deleteNamespace(ns));

let counter = 0;
const uniqueName = () => `w${++counter}`;

async function create(manifest: object, flags: string[] = []) {
  return kubectl(['create', ...flags, '-f', '-'], { input: JSON.stringify(manifest) });
}

describe('the API server validates Websites', () => {
  test.each<[string, Record<string, unknown> | undefined, RegExp]>([
    [
      'replicas 0',
      { title: 'T', replicas: 0 },
      /spec\.replicas: Invalid value: 0: spec\.replicas in body should be greater than or equal to 1/,
    ],
    [
      'replicas 6',
      { title: 'T', replicas: 6 },
      /spec\.replicas: Invalid value: 6: spec\.replicas in body should be less than or equal to 5/,
    ],
    [
      'replicas 2.5',
      { title: 'T', replicas: 2.5 },
      /spec\.replicas: Invalid value: "number": spec\.replicas in body must be of type integer/,
    ],
    [
      'replicas "3"',
      { title: 'T', replicas: '3' },
      /spec\.replicas: Invalid value: "string": spec\.replicas in body must be of type integer/,
    ],
    ['a missing title', { replicas: 2 }, /spec\.title: Required value/],
    [
      'a blank title',
      { title: ' \t ', replicas: 2 },
      /spec\.title: Invalid value: " \\t ": spec\.title must not be blank: set it to the text the page should show/,
    ],
    [
      'an empty title',
      { title: '', replicas: 2 },
      /spec\.title: Invalid value: "": spec\.title in body should be at least 1 chars long/,
    ],
    ['missing replicas', { title: 'T' }, /spec\.replicas: Required value/],
    [
      'a named colour',
      { title: 'T', replicas: 1, color: 'red' },
      /spec\.color: Invalid value: "red": spec\.color in body should match '\^#\(\[0-9a-fA-F\]\{3\}\|\[0-9a-fA-F\]\{6\}\)\$'/,
    ],
    ['a five-digit hex colour', { title: 'T', replicas: 1, color: '#12345' }, /spec\.color: Invalid value: "#12345"/],
    ['no spec at all', undefined, /spec: Required value/],
  ])('rejects %s, naming the field and the rule', async (_, spec, message) => {
    const name = uniqueName();
    const manifest = website(name, ns, spec ?? {});
    if (spec === undefined) delete (manifest as { spec?: unknown }).spec;
    const result = await create(manifest);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(new RegExp(`The Website "${name}" is invalid`));
    expect(result.stderr).toMatch(message);
    expect((await kubectl(['get', 'website', name, '-n', ns])).code).not.toBe(0);
  });

  test('rejects a name too long for the website- prefix', async () => {
    const name = `a${'b'.repeat(55)}`; // 56 characters
    const result = await create(website(name, ns, { title: 'T', replicas: 1 }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /metadata\.name: Invalid value: .*metadata\.name must be at most 55 characters: the operator creates a Service named 'website-<name>'/,
    );
  });

  test('rejects a name with a dot, which cannot be part of a Service name', async () => {
    const result = await create(website('my.site', ns, { title: 'T', replicas: 1 }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /metadata\.name: Invalid value: .*must consist of lowercase letters, digits and '-' \(no '\.'\)/,
    );
  });

  test('accepts the boundaries: 1 and 5 replicas, a 55-character name, #RGB colours', async () => {
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(website('min', ns, { title: 'Min', replicas: 1, color: '#fff' })),
    });
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(website('max', ns, { title: 'Max', replicas: 5, color: '#A1b2C3' })),
    });
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(website('c'.repeat(55), ns, { title: 'Long name', replicas: 1 })),
    });
    expect(
      (await getJson(['websites', '-n', ns])).items.map((w: { metadata: { name: string } }) => w.metadata.name).sort(),
    ).toEqual(['c'.repeat(55), 'max', 'min'].sort());
  });

  test('defaults color to #2196F3 when omitted', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('defaulted', ns, { title: 'D', replicas: 2 })) });
    const stored = await getJson(['website', 'defaulted', '-n', ns]);
    expect(stored.spec).toEqual({ title: 'D', replicas: 2, color: '#2196F3' });
  });

  test('rejects an update that breaks the rules, keeping the stored object', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('updated', ns, { title: 'U', replicas: 2 })) });
    const result = await kubectl([
      'patch',
      'website',
      'updated',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"spec":{"replicas":9}}',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /spec\.replicas: Invalid value: 9: spec\.replicas in body should be less than or equal to 5/,
    );
    expect((await getJson(['website', 'updated', '-n', ns])).spec.replicas).toBe(2);
  });

  test('prunes unknown fields (and strict clients are told about them)', async () => {
    const manifest = { ...website('pruned', ns, { title: 'P', replicas: 1, size: 'XL' }), extra: true };
    const strict = await create(manifest);
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/unknown field "spec\.size"/);

    await ok(['create', '--validate=false', '-f', '-'], { input: JSON.stringify(manifest) });
    const stored = await getJson(['website', 'pruned', '-n', ns]);
    expect(stored.spec).toEqual({ title: 'P', replicas: 1, color: '#2196F3' });
    expect(stored.extra).toBeUndefined();
  });
});
