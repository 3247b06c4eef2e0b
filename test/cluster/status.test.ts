import { createNamespace, deleteNamespace, getJson, kubectl, ok, website } from '../../harness/cluster/kube.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('status');
});
afterAll(() => deleteNamespace(ns));

const patch = (name: string, body: object, subresource?: string) =>
  ok([
    'patch',
    'website',
    name,
    '-n',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify(body),
    ...(subresource ? [`--subresource=${subresource}`] : []),
  ]);

describe('the status subresource', () => {
  beforeAll(async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('site', ns, { title: 'Site', replicas: 2 })) });
  });

  test('a write to /status changes status and ignores spec', async () => {
    await patch(
      'site',
      { spec: { replicas: 4 }, status: { availableReplicas: 2, url: 'http://website-site.status.svc.cluster.local' } },
      'status',
    );
    const stored = await getJson(['website', 'site', '-n', ns]);
    expect(stored.spec.replicas).toBe(2);
    expect(stored.status).toEqual({ availableReplicas: 2, url: 'http://website-site.status.svc.cluster.local' });
  });

  test('a write to the main endpoint changes spec and ignores status', async () => {
    await patch('site', { spec: { title: 'Renamed' }, status: { availableReplicas: 5 } });
    const stored = await getJson(['website', 'site', '-n', ns]);
    expect(stored.spec.title).toBe('Renamed');
    expect(stored.status.availableReplicas).toBe(2);
  });

  test('metadata.generation moves only on spec changes', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('gen', ns, { title: 'G', replicas: 1 })) });
    const generation = async () => (await getJson(['website', 'gen', '-n', ns])).metadata.generation;
    expect(await generation()).toBe(1);
    await patch('gen', { status: { availableReplicas: 1 } }, 'status');
    expect(await generation()).toBe(1);
    await ok(['label', 'website', 'gen', '-n', ns, 'team=web']);
    expect(await generation()).toBe(1);
    await patch('gen', { spec: { replicas: 3 } });
    expect(await generation()).toBe(2);
  });

  test('status validation applies on /status too', async () => {
    const result = await kubectl([
      'patch',
      'website',
      'site',
      '-n',
      ns,
      '--type=merge',
      '--subresource=status',
      '-p',
      '{"status":{"availableReplicas":-1}}',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/status\.availableReplicas: Invalid value: -1/);
  });
});

describe('kubectl views of Websites', () => {
  beforeAll(async () => {
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(website('columns', ns, { title: 'Columns', replicas: 3, color: '#4CAF50' })),
    });
    await patch(
      'columns',
      { status: { availableReplicas: 3, url: 'http://website-columns.example.svc.cluster.local' } },
      'status',
    );
  });

  const table = async (...flags: string[]) =>
    (await ok(['get', 'websites', 'columns', '-n', ns, ...flags]))
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s{2,}/));

  test('kubectl get ws shows Title, Replicas, Color and Age', async () => {
    const [header, row] = await table();
    expect(header).toEqual(['NAME', 'TITLE', 'REPLICAS', 'COLOR', 'AGE']);
    expect(row.slice(0, 4)).toEqual(['columns', 'Columns', '3', '#4CAF50']);
  });

  test('-o wide adds Available and URL', async () => {
    const [header, row] = await table('-o', 'wide');
    expect(header).toEqual(['NAME', 'TITLE', 'REPLICAS', 'COLOR', 'AVAILABLE', 'URL', 'AGE']);
    expect(row.slice(0, 6)).toEqual([
      'columns',
      'Columns',
      '3',
      '#4CAF50',
      '3',
      'http://website-columns.example.svc.cluster.local',
    ]);
  });

  test('the short name ws and the singular website both work', async () => {
    expect(await ok(['get', 'ws', '-n', ns, '-o', 'name'])).toContain('website.web.example.com/columns');
    expect(await ok(['get', 'website', 'columns', '-n', ns, '-o', 'name'])).toBe('website.web.example.com/columns\n');
  });

  test('kubectl explain documents the fields', async () => {
    const replicas = await ok(['explain', 'website.spec.replicas']);
    expect(replicas).toMatch(/FIELD:\s+replicas <integer>/);
    expect(replicas).toContain('Number of pods serving the website, from 1 to 5.');
    const spec = await ok(['explain', 'website.spec']);
    expect(spec).toMatch(/title\s+<string> -required-/);
    expect(spec).toMatch(/color\s+<string>/);
    expect(spec).toContain('CSS hex colour');
  });
});
