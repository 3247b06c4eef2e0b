import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KUBECONFIG, KUBECTL } from '../../harness/cluster/env.ts';
import { createNamespace, deleteNamespace, ok, website } from '../../harness/cluster/kube.ts';
import { eventually } from '../../harness/process/poll.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('watch');
});
afterAll(() => deleteNamespace(ns));

interface WatchEvent {
  type: string;
  object: { kind: string; apiVersion: string; metadata: { name: string }; spec: { replicas: number } };
}

test('?watch=true on the collection streams ADDED, MODIFIED and DELETED Website events', async () => {
  // The raw endpoint of spec §4, read as the long-lived HTTP response it is.
  const watch = spawn(KUBECTL, [
    '--kubeconfig',
    KUBECONFIG,
    'get',
    '--raw',
    `/apis/web.example.com/v1/namespaces/${ns}/websites?watch=true`,
  ]);
  const events: WatchEvent[] = [];
  createInterface({ input: watch.stdout }).on('line', (line) => events.push(JSON.parse(line)));
  try {
    // The watch is established once it reports an object that already exists.
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('before', ns, { title: 'Before', replicas: 1 })) });
    await eventually('the watch to start', async () => (events.length > 0 ? true : undefined));

    await ok(['create', '-f', '-'], { input: JSON.stringify(website('watched', ns, { title: 'W', replicas: 1 })) });
    await ok(['patch', 'website', 'watched', '-n', ns, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    await ok(['delete', 'website', 'watched', '-n', ns]);

    const seen = await eventually('ADDED, MODIFIED and DELETED', async () => {
      const mine = events.filter((e) => e.object.metadata.name === 'watched');
      return mine.length >= 3 ? mine : undefined;
    });
    expect(seen.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    for (const e of seen) expect([e.object.kind, e.object.apiVersion]).toEqual(['Website', 'web.example.com/v1']);
    expect(seen[1].object.spec.replicas).toBe(3);
  } finally {
    watch.kill();
  }
});
