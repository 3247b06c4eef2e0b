import {
  createNamespace,
  deleteNamespace,
  getJson,
  kubectl,
  ok,
  testDeployment,
  website,
} from '../../harness/cluster/kube.ts';
import { eventually } from '../../harness/process/poll.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('lifecycle');
});
afterAll(() => deleteNamespace(ns));

const FINALIZER = 'websites.web.example.com/cleanup';
const exists = async (kind: string, name: string) => (await kubectl(['get', kind, name, '-n', ns])).code === 0;
const gone = (kind: string, name: string) =>
  eventually(`${kind} ${name} to be deleted`, async () => ((await exists(kind, name)) ? undefined : true));

describe('finalizers (spec §3)', () => {
  test('delete leaves a Website with a finalizer Terminating; removing the last finalizer removes it', async () => {
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(
        website('final', ns, { title: 'F', replicas: 1 }, { finalizers: [FINALIZER, 'example.com/other'] }),
      ),
    });
    await ok(['delete', 'website', 'final', '-n', ns, '--wait=false']);

    const removeFirstFinalizer = () =>
      ok([
        'patch',
        'website',
        'final',
        '-n',
        ns,
        '--type=json',
        '-p',
        '[{"op":"remove","path":"/metadata/finalizers/0"}]',
      ]);
    const terminating = await getJson(['website', 'final', '-n', ns]);
    expect(terminating.metadata.deletionTimestamp).toEqual(expect.any(String));

    // Other finalizers remain: still Terminating.
    await removeFirstFinalizer();
    expect((await getJson(['website', 'final', '-n', ns])).metadata.finalizers).toEqual(['example.com/other']);

    // The last one goes: the platform removes the object.
    await removeFirstFinalizer();
    await gone('website', 'final');
  });
});

describe('cascading deletion of a child with an owner reference', () => {
  // A Website and its Deployment website-<name>, owned as the operator owns it.
  async function websiteWithChild(name: string, options: { owned?: boolean; childFinalizers?: string[] } = {}) {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website(name, ns, { title: name, replicas: 1 })) });
    const uid = (await getJson(['website', name, '-n', ns])).metadata.uid;
    const ownerReferences =
      options.owned === false
        ? undefined
        : [
            {
              apiVersion: 'web.example.com/v1',
              kind: 'Website',
              name,
              uid,
              controller: true,
              blockOwnerDeletion: true,
            },
          ];
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(testDeployment(name, ns, { ownerReferences, finalizers: options.childFinalizers })),
    });
  }

  test('Background: the Website goes at once, the Deployment is garbage-collected', async () => {
    await websiteWithChild('bg');
    await ok(['delete', 'website', 'bg', '-n', ns, '--cascade=background', '--wait=false']);
    await gone('website', 'bg');
    await gone('deployment', 'website-bg');
  });

  test('Foreground: the Website stays until its Deployment is gone', async () => {
    // A finalizer of the test's own holds the child, so the intermediate state can be observed.
    await websiteWithChild('fg', { childFinalizers: ['example.com/hold'] });
    await ok(['delete', 'website', 'fg', '-n', ns, '--cascade=foreground', '--wait=false']);

    const parent = await getJson(['website', 'fg', '-n', ns]);
    expect(parent.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(parent.metadata.finalizers).toContain('foregroundDeletion');
    await eventually('the garbage collector to delete the child', async () =>
      (await getJson(['deployment', 'website-fg', '-n', ns])).metadata.deletionTimestamp ? true : undefined,
    );
    expect(await exists('website', 'fg')).toBe(true);

    await ok([
      'patch',
      'deployment',
      'website-fg',
      '-n',
      ns,
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    ]);
    await gone('deployment', 'website-fg');
    await gone('website', 'fg');
  });

  test('Orphan: the Deployment is kept as a standalone object', async () => {
    await websiteWithChild('orphan');
    await ok(['delete', 'website', 'orphan', '-n', ns, '--cascade=orphan']);
    await gone('website', 'orphan');
    const child = await eventually('the owner reference to be removed', async () => {
      const deployment = await getJson(['deployment', 'website-orphan', '-n', ns]);
      return deployment.metadata.ownerReferences ? undefined : deployment;
    });
    expect(child.metadata.deletionTimestamp).toBeUndefined();
  });

  test('without an owner reference, deleting the Website leaves the Deployment behind', async () => {
    await websiteWithChild('unowned', { owned: false });
    await websiteWithChild('owned');
    await ok(['delete', 'website', 'unowned', 'owned', '-n', ns]);
    // Once the garbage collector has removed the owned child, it has had its chance at the other.
    await gone('deployment', 'website-owned');
    expect(await exists('deployment', 'website-unowned')).toBe(true);
  });
});
