import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ShellOperatorProcess, startShellOperator } from '../../bench/shell-operator.ts';
import { ShellOperator, shellOperatorRoleRules } from '../../lib/shell-operator/shell-operator.ts';
import { renderPage } from '../../lib/workload/page.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';
import { synth } from '../helpers.ts';
import { KUBECONFIG, KUBECTL } from './env.ts';
import { createNamespace, deleteNamespace, eventually, getJson, kubectl, ok, testDeployment, website } from './kube.ts';

const cluster = { kubeconfig: KUBECONFIG, kubectl: KUBECTL };
const RESTRICTED = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/warn': 'restricted' };
/** Short cycles keep the file fast; the default of 10 s has its own test. */
const INTERVAL = 3;

/** The ShellOperator chart for `namespace`, applied as a user applies dist/website-shell-operator.yaml. */
async function installShellOperator(namespace: string): Promise<void> {
  const manifests = synth((chart) => new ShellOperator(chart, 'shell', { namespace, createNamespace: false }));
  await ok(['apply', '--server-side', '-f', '-'], { input: manifests.map((m) => JSON.stringify(m)).join('\n') });
}

/** The children WebsiteWorkload renders for the Website as stored in the cluster. */
async function rendered(name: string, namespace: string) {
  const stored = await getJson(['website', name, '-n', namespace]);
  return synth((chart) => new WebsiteWorkload(chart, 'w', { website: stored }));
}

const pageOf = (deployment: any): string => deployment.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'WEBSITE_HTML').value;

async function children(name: string, namespace: string): Promise<{ deployment: any; service: any } | undefined> {
  const found = await kubectl(['get', 'deployment,service', `website-${name}`, '-n', namespace, '-o', 'json']);
  if (found.code !== 0) return undefined;
  const items = JSON.parse(found.stdout).items;
  return { deployment: items.find((i: any) => i.kind === 'Deployment'), service: items.find((i: any) => i.kind === 'Service') };
}

async function gone(name: string, namespace: string): Promise<boolean> {
  const left = await ok(['get', 'deployments,services', '-n', namespace, '-l', `app.kubernetes.io/instance=${name}`, '-o', 'name']);
  return left.trim() === '';
}

let ns: string;
let loop: ShellOperatorProcess;

/** Resolves after a whole cycle that began after this call has finished. */
async function nextCycle(): Promise<void> {
  // The cycle under way may have listed before the change; the one after it has not.
  await loop.waitForCycles(loop.cycles().length + 2, 4 * (INTERVAL + 10) * 1000);
}

beforeAll(async () => {
  ns = await createNamespace('shell', RESTRICTED);
  await installShellOperator(ns);
  loop = startShellOperator(cluster, ns, { INTERVAL: String(INTERVAL) });
  await loop.waitForCycles(1, 60_000);
});
afterAll(async () => {
  await loop?.stop();
  await deleteNamespace(ns);
});

describe('the shell operator, looping under its ServiceAccount on a real cluster', () => {
  test("gives a new Website its Deployment and Service in the next cycle, field for field WebsiteWorkload's", async () => {
    const sites: Record<string, { title: string; replicas: number; color?: string }> = {
      shop: { title: '<b>Shop</b> & "more"', replicas: 3, color: '#FFEB3B' },
      plain: { title: 'Plain', replicas: 1 },
      short: { title: 'Short colour', replicas: 2, color: '#abc' },
    };
    for (const [name, spec] of Object.entries(sites)) await ok(['create', '-f', '-'], { input: JSON.stringify(website(name, ns, spec)) });
    await nextCycle();

    for (const name of Object.keys(sites)) {
      const applied = await children(name, ns);
      expect(applied).toBeDefined();
      const [deployment, service] = await rendered(name, ns);
      // Everything WebsiteWorkload renders is in the cluster as rendered: names, labels, selector,
      // replicas, owner reference, page, pod template (the API server only adds defaults).
      expect(applied!.deployment).toMatchObject(deployment);
      expect(applied!.service).toMatchObject(service);
      expect(pageOf(applied!.deployment)).toBe(renderPage(sites[name].title, sites[name].color ?? '#2196F3'));
    }
    const managers = (await getJson(['deployment', 'website-shop', '-n', ns, '--show-managed-fields'])).metadata.managedFields;
    expect(managers).toContainEqual(expect.objectContaining({ manager: 'website-shell-operator', operation: 'Apply' }));
    // kwok's nodes run the pods: the Deployment really becomes available.
    await eventually('3 available replicas of website-shop', async () => ((await getJson(['deployment', 'website-shop', '-n', ns])).status?.availableReplicas === 3 ? true : undefined));
  });

  test('shows hostile titles literally and executes none of them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pwned-'));
    const marker = (n: number) => join(dir, `pwned-${n}`);
    const titles = [
      `$(touch ${marker(0)})`,
      `\`touch ${marker(1)}\``,
      `"; touch ${marker(2)}; echo "`,
      `'; touch ${marker(3)}; echo '`,
      `first line\ntouch ${marker(4)}\n$(touch ${marker(5)})`,
      `\\"$(touch ${marker(6)})\\" \\(env) \${HOME} %s %n`,
      '<script>alert("x")</script> &amp; &',
      'tab\tand emoji 🚀🌈, ünïcödé, 中文',
      '--dry-run=server -o yaml',
    ];
    try {
      const names = titles.map((_, i) => `hostile-${i}`);
      for (const [i, title] of titles.entries()) await ok(['create', '-f', '-'], { input: JSON.stringify(website(names[i], ns, { title, replicas: 1, color: '#222' })) });
      await nextCycle();
      for (const [i, title] of titles.entries()) {
        const stored = await getJson(['website', names[i], '-n', ns]);
        expect(stored.spec.title).toBe(title);
        const applied = await children(names[i], ns);
        expect(pageOf(applied!.deployment)).toBe(renderPage(title, '#222'));
        expect(applied!.deployment).toMatchObject((await rendered(names[i], ns))[0]);
      }
      expect(readdirSync(dir)).toEqual([]);
      expect(titles.map((_, n) => existsSync(marker(n)))).not.toContain(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('carries edits of title, colour and replicas to the Deployment in the next cycle', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('edited', ns, { title: 'Before', replicas: 1 })) });
    await nextCycle();
    await ok(['patch', 'website', 'edited', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { title: 'After & beyond', replicas: 4, color: '#000000' } })]);
    await nextCycle();
    const { deployment } = (await children('edited', ns))!;
    expect(deployment.spec.replicas).toBe(4);
    expect(pageOf(deployment)).toBe(renderPage('After & beyond', '#000000'));
    expect(deployment).toMatchObject((await rendered('edited', ns))[0]);
  });

  test('puts back a child that was edited by hand or deleted', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('steady', ns, { title: 'Steady', replicas: 2 })) });
    await nextCycle();
    await ok(['scale', 'deployment', 'website-steady', '-n', ns, '--replicas=5']);
    await ok(['delete', 'service', 'website-steady', '-n', ns]);
    await nextCycle();
    const { deployment, service } = (await children('steady', ns))!;
    expect(deployment.spec.replicas).toBe(2);
    expect(service).toMatchObject((await rendered('steady', ns))[1]);
  });

  test.each(['background', 'foreground'])('deleting a Website (%s) deletes its children, and the loop does not bring them back', async (cascade) => {
    const name = `doomed-${cascade}`;
    await ok(['create', '-f', '-'], { input: JSON.stringify(website(name, ns, { title: 'Doomed', replicas: 2 })) });
    await nextCycle();
    expect(await children(name, ns)).toBeDefined();
    await ok(['delete', 'website', name, '-n', ns, `--cascade=${cascade}`, '--wait=false']);
    await eventually(`the children of ${name} to be garbage-collected`, async () => ((await gone(name, ns)) ? true : undefined));
    await nextCycle();
    expect(await gone(name, ns)).toBe(true);
  });

  test('one Website failing to apply does not hold up the others, and converges once the cause is gone', async () => {
    // A Deployment in the way with another selector: the selector is immutable, so the apply fails.
    const squatter = testDeployment('blocked', ns);
    const labels = { ...squatter.spec.selector.matchLabels, squatter: 'yes' };
    squatter.spec.selector.matchLabels = labels;
    squatter.spec.template.metadata.labels = labels;
    await ok(['create', '-f', '-'], { input: JSON.stringify(squatter) });
    for (const name of ['blocked', 'unblocked']) await ok(['create', '-f', '-'], { input: JSON.stringify(website(name, ns, { title: name, replicas: 1 })) });
    const from = loop.lines.length;
    await nextCycle();
    const log = loop.lines.slice(from).map((l) => l.text);
    expect(log).toContainEqual(expect.stringMatching(/ website blocked: apply failed: .*field is immutable/));
    expect(log).toContainEqual(expect.stringMatching(/ cycle done: \d+ Websites, \d+ applied, 1 failed, \d+ ms$/));
    expect((await children('unblocked', ns))!.deployment).toMatchObject((await rendered('unblocked', ns))[0]);
    expect(loop.running()).toBe(true);

    await ok(['delete', 'deployment', 'website-blocked', '-n', ns, '--wait=true']);
    await nextCycle();
    expect((await children('blocked', ns))!.deployment).toMatchObject((await rendered('blocked', ns))[0]);
    expect(loop.cycles().at(-1)!.text).toMatch(/, 0 failed, /);
  });

  test('survives losing its permission: logs the refused list every cycle, keeps looping, converges when it is back', async () => {
    const binding = await getJson(['rolebinding', 'website-shell-operator', '-n', ns]);
    await ok(['delete', 'rolebinding', 'website-shell-operator', '-n', ns]);
    try {
      await ok(['create', '-f', '-'], { input: JSON.stringify(website('during-outage', ns, { title: 'Outage', replicas: 1 })) });
      const from = loop.lines.length;
      await eventually('two refused lists', async () => {
        const refused = loop.lines.slice(from).filter((l) => /cannot list Websites in namespace .*: .*forbidden: User "system:serviceaccount:.*:website-shell-operator" cannot list resource "websites"/.test(l.text));
        return refused.length >= 2 ? refused : undefined;
      }, 4 * (INTERVAL + 10) * 1000);
      expect(loop.running()).toBe(true);
      expect(await children('during-outage', ns)).toBeUndefined();
    } finally {
      const { resourceVersion: _, uid: __, creationTimestamp: ___, managedFields: ____, ...metadata } = binding.metadata;
      await ok(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ ...binding, metadata }) });
    }
    await eventually('the children of during-outage', () => children('during-outage', ns), 4 * (INTERVAL + 10) * 1000);
  });
});

describe('the shell operator in a namespace of its own', () => {
  let own: string;
  beforeAll(async () => {
    own = await createNamespace('shell-own', RESTRICTED);
    await installShellOperator(own);
  });
  afterAll(() => deleteNamespace(own));

  const once = async () => {
    const run = startShellOperator(cluster, own, { ONCE: '1' });
    return { code: await run.exited, log: run.lines.map((l) => l.text).join('\n') };
  };
  const can = async (verb: string, resource: string) =>
    (await kubectl(['auth', 'can-i', verb, resource, '-n', own, `--as=system:serviceaccount:${own}:website-shell-operator`])).stdout.trim();

  // Each case takes one verb away, then has the next cycle need it: a new Website needs create
  // (and patch: every apply is a PATCH), an existing one needs patch.
  test.each([
    ['websites', 'list', /cannot list Websites .*cannot list resource "websites"/],
    ['deployments', 'create', /apply failed: .*cannot create resource "deployments"/],
    ['deployments', 'patch', /apply failed: .*cannot patch resource "deployments"/],
    ['services', 'create', /apply failed: .*cannot create resource "services"/],
    ['services', 'patch', /apply failed: .*cannot patch resource "services"/],
  ])('needs every verb of its Role: without %s %s a cycle fails', async (resource, verb, message) => {
    const rules = shellOperatorRoleRules()
      .map((rule) => (rule.resources!.includes(resource) ? { ...rule, verbs: rule.verbs.filter((v) => v !== verb) } : rule))
      .filter((rule) => rule.verbs.length > 0);
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'website-shell-operator', namespace: own }, rules };
    await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify(role) });
    try {
      await eventually(`the Role to lose ${verb} ${resource}`, async () => ((await can(verb, resource)) === 'no' ? true : undefined));
      await ok(['create', '-f', '-'], { input: JSON.stringify(website(`without-${verb}-${resource}`, own, { title: 'T', replicas: 1 })) });
      const run = await once();
      expect(run.code).toBe(1);
      expect(run.log).toMatch(message);
    } finally {
      await installShellOperator(own);
    }
    // The positive control: with its Role whole, the same cycle succeeds.
    await eventually(`the Role to allow ${verb} ${resource} again`, async () => ((await can(verb, resource)) === 'yes' ? true : undefined));
    const run = await once();
    expect([run.code, run.log]).toEqual([0, expect.stringMatching(/, 0 failed, /)]);
  });

  test('sleeps 10 seconds between cycles by default and stops at once on SIGTERM', async () => {
    const run = startShellOperator(cluster, own);
    try {
      await run.waitForCycles(2, 60_000);
      const [first, second] = run.cycles();
      const cycleMs = Number(/, (\d+) ms$/.exec(second.text)![1]);
      expect(second.at - first.at - cycleMs).toBeGreaterThanOrEqual(9_900);
      expect(second.at - first.at - cycleMs).toBeLessThan(12_000);
      expect(run.lines[0].text).toMatch(/every 10s as field manager website-shell-operator$/);
    } finally {
      const stopped = await run.stop();
      expect(stopped.code).toBe(0);
      expect(stopped.ms).toBeLessThan(2_000);
      expect(run.lines.at(-1)!.text).toMatch(/stopping on signal$/);
    }
  });
});
