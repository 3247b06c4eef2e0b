import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { AUDIT_LOG, ROOT } from '../../harness/cluster/env.ts';
import {
  create,
  createNamespace,
  deleteNamespace,
  getJson,
  kubectl,
  ok,
  TEST_CLUSTER,
  testDeployment,
  website,
} from '../../harness/cluster/kube.ts';
import { hostileTitles, synth } from '../../harness/manifests.ts';
import { type ShellOperatorProcess, startShellOperator } from '../../harness/operator/shell-operator.ts';
import { eventually } from '../../harness/process/poll.ts';
import {
  heartbeatMaxAgeSeconds,
  SHELL_OPERATOR_FIELD_MANAGER,
  ShellOperator,
  shellOperatorRoleRules,
} from '../../lib/shell-operator/shell-operator.ts';
import { DEFAULT_GROUP } from '../../lib/website/schema.ts';
import { renderPage } from '../../lib/workload/page.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';

const cluster = TEST_CLUSTER;
const RESTRICTED = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/warn': 'restricted',
};
/** One-second cycles keep the file fast; the default of 10 s has its own test. */
const INTERVAL = 1;

/** The ShellOperator chart for `namespace`, applied as a user applies dist/website-shell-operator/website-shell-operator.yaml. */
async function installShellOperator(namespace: string, group = DEFAULT_GROUP): Promise<void> {
  const manifests = synth((chart) => new ShellOperator(chart, 'shell', { namespace, createNamespace: false, group }));
  await ok(['apply', '--server-side', '-f', '-'], { input: manifests.map((m) => JSON.stringify(m)).join('\n') });
}

/** A fresh namespace (Pod Security restricted) with the shell operator's objects, but no loop running. */
async function shellNamespace(prefix: string, group = DEFAULT_GROUP): Promise<string> {
  const namespace = await createNamespace(prefix, RESTRICTED);
  await installShellOperator(namespace, group);
  return namespace;
}

/** One cycle of the shell operator (ONCE=1) in `namespace`: its exit code and its log. */
async function once(namespace: string): Promise<{ code: number | null; log: string[] }> {
  const run = startShellOperator(cluster, namespace, { ONCE: '1' });
  return { code: await run.exited, log: run.lines.map((l) => l.text) };
}

/** The children WebsiteWorkload renders for the Website as stored in the cluster. */
async function rendered(name: string, namespace: string, group = DEFAULT_GROUP) {
  const stored = await getJson([`websites.${group}`, name, '-n', namespace]);
  return synth((chart) => new WebsiteWorkload(chart, 'w', { website: stored, group }));
}

/**
 * The shell operator applied exactly what WebsiteWorkload renders for the Website, no more and no
 * less: the rendered children, applied server-side (a dry run) as the operator's field manager,
 * change nothing, neither a value nor the fields that manager owns. A field the script had added,
 * left out or set otherwise would be removed, added or changed by that apply. (A field the API
 * server defaults counts as sent with its default either way.)
 */
async function expectAppliedAsRendered(name: string, namespace: string, group = DEFAULT_GROUP): Promise<void> {
  const items = await rendered(name, namespace, group);
  const applyAgain = [
    'apply',
    '--server-side',
    '--force-conflicts',
    `--field-manager=${SHELL_OPERATOR_FIELD_MANAGER}`,
    '--dry-run=server',
    '-o',
    'json',
    '-f',
    '-',
  ];
  // Controllers write the Deployment's status meanwhile: compare with a read that the dry run falls between.
  const { stored, again } = await eventually(`a steady read of the children of ${name}`, async () => {
    const before = await children(name, namespace);
    const again = JSON.parse(
      await ok(applyAgain, { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) }),
    ).items;
    const after = await children(name, namespace);
    const version = (c: typeof before) =>
      [c?.deployment.metadata.resourceVersion, c?.service.metadata.resourceVersion].join();
    return before && version(before) === version(after) ? { stored: before, again } : undefined;
  });
  expect(again).toEqual([stored.deployment, stored.service]);
}

const pageOf = (deployment: any): string =>
  deployment.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === 'WEBSITE_HTML').value;

async function children(name: string, namespace: string): Promise<{ deployment: any; service: any } | undefined> {
  const found = await kubectl(['get', 'deployment,service', `website-${name}`, '-n', namespace, '-o', 'json']);
  if (found.code !== 0) return undefined;
  const items = JSON.parse(found.stdout).items;
  return {
    deployment: items.find((i: any) => i.kind === 'Deployment'),
    service: items.find((i: any) => i.kind === 'Service'),
  };
}

async function gone(name: string, namespace: string): Promise<boolean> {
  const left = await ok([
    'get',
    'deployments,services',
    '-n',
    namespace,
    '-l',
    `app.kubernetes.io/instance=${name}`,
    '-o',
    'name',
  ]);
  return left.trim() === '';
}

let ns: string;
let loop: ShellOperatorProcess;

/** Resolves after a whole cycle that began after this call has finished. */
async function nextCycle(): Promise<void> {
  // The cycle under way may have listed before the change; the one after it has not.
  await loop.waitForCycles(loop.cycles().length + 2, 4 * (INTERVAL + 10) * 1000);
}

/** Resolves once the loop has logged `count` more refused lists of Websites. */
async function refusedLists(count: number): Promise<void> {
  const from = loop.lines.length;
  await eventually(
    `${count} refused lists`,
    async () => {
      const refused = loop.lines
        .slice(from)
        .filter((l) =>
          /cannot list Websites in namespace .*: .*forbidden: User "system:serviceaccount:.*:website-shell-operator" cannot list resource "websites"/.test(
            l.text,
          ),
        );
      return refused.length >= count ? refused : undefined;
    },
    (count + 2) * (INTERVAL + 10) * 1000,
  );
}

/** `kubectl auth can-i` for the shell operator's ServiceAccount in `namespace`: "yes" or "no". */
const can = async (namespace: string, verb: string, resource: string) =>
  (
    await kubectl([
      'auth',
      'can-i',
      verb,
      resource,
      '-n',
      namespace,
      `--as=system:serviceaccount:${namespace}:website-shell-operator`,
    ])
  ).stdout.trim();

/** Runs `body` while the shell operator's Role in `namespace` lacks `verb` on `resource`; puts the Role back after. */
async function withoutVerb(
  namespace: string,
  resource: string,
  verb: string,
  body: () => Promise<void>,
): Promise<void> {
  const rules = shellOperatorRoleRules()
    .map((rule) =>
      rule.resources!.includes(resource) ? { ...rule, verbs: rule.verbs.filter((v) => v !== verb) } : rule,
    )
    .filter((rule) => rule.verbs.length > 0);
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'website-shell-operator', namespace },
    rules,
  };
  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify(role) });
  try {
    await eventually(`the Role to lose ${verb} ${resource}`, async () =>
      (await can(namespace, verb, resource)) === 'no' ? true : undefined,
    );
    await body();
  } finally {
    await installShellOperator(namespace);
  }
  await eventually(`the Role to allow ${verb} ${resource} again`, async () =>
    (await can(namespace, verb, resource)) === 'yes' ? true : undefined,
  );
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
    for (const [name, spec] of Object.entries(sites)) await create(website(name, ns, spec));
    await nextCycle();

    for (const name of Object.keys(sites)) {
      const applied = await children(name, ns);
      expect(applied).toBeDefined();
      const [deployment, service] = await rendered(name, ns);
      // Everything WebsiteWorkload renders is in the cluster as rendered: names, labels, selector,
      // replicas, owner reference, page, pod template (the API server only adds defaults)...
      expect(applied!.deployment).toMatchObject(deployment);
      expect(applied!.service).toMatchObject(service);
      expect(pageOf(applied!.deployment)).toBe(renderPage(sites[name].title, sites[name].color ?? '#2196F3'));
      expect(JSON.stringify(applied)).not.toContain('placeholder');
      // ...and the operator applied nothing else.
      await expectAppliedAsRendered(name, ns);
    }
    // Server-side apply (operation Apply) as its own field manager, of both children.
    for (const kind of ['deployment', 'service']) {
      const managers = (await getJson([kind, 'website-shop', '-n', ns, '--show-managed-fields'])).metadata
        .managedFields;
      expect(managers).toContainEqual(
        expect.objectContaining({ manager: 'website-shell-operator', operation: 'Apply' }),
      );
    }
    // kwok's nodes run the pods: the Deployment really becomes available.
    await eventually('3 available replicas of website-shop', async () =>
      (await getJson(['deployment', 'website-shop', '-n', ns])).status?.availableReplicas === 3 ? true : undefined,
    );
  });

  test('shows hostile titles literally and executes none of them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pwned-'));
    const marker = (n: number) => join(dir, `pwned-${n}`);
    const titles = hostileTitles(marker);
    try {
      const names = titles.map((_, i) => `hostile-${i}`);
      for (const [i, title] of titles.entries())
        await create(website(names[i], ns, { title, replicas: 1, color: '#222' }));
      await nextCycle();
      for (const [i, title] of titles.entries()) {
        const stored = await getJson(['website', names[i], '-n', ns]);
        expect(stored.spec.title).toBe(title);
        const applied = await children(names[i], ns);
        expect(pageOf(applied!.deployment)).toBe(renderPage(title, '#222'));
        await expectAppliedAsRendered(names[i], ns);
      }
      expect(readdirSync(dir)).toEqual([]);
      expect(titles.map((_, n) => existsSync(marker(n)))).not.toContain(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('carries edits of title, colour and replicas to the Deployment in the next cycle', async () => {
    await create(website('edited', ns, { title: 'Before', replicas: 1 }));
    await nextCycle();
    await ok([
      'patch',
      'website',
      'edited',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { title: 'After & beyond', replicas: 4, color: '#000000' } }),
    ]);
    await nextCycle();
    const { deployment } = (await children('edited', ns))!;
    expect(deployment.spec.replicas).toBe(4);
    expect(pageOf(deployment)).toBe(renderPage('After & beyond', '#000000'));
    await expectAppliedAsRendered('edited', ns);
  });

  test('puts back a child that was edited by hand or deleted', async () => {
    await create(website('steady', ns, { title: 'Steady', replicas: 2 }));
    await nextCycle();
    await ok(['scale', 'deployment', 'website-steady', '-n', ns, '--replicas=5']);
    await ok(['delete', 'service', 'website-steady', '-n', ns]);
    await nextCycle();
    const { deployment, service } = (await children('steady', ns))!;
    expect(deployment.spec.replicas).toBe(2);
    expect(service).toMatchObject((await rendered('steady', ns))[1]);
    await expectAppliedAsRendered('steady', ns);
  });

  test("forces its values back over another field manager's, taking back the fields (a conflict it forces)", async () => {
    await create(website('contested', ns, { title: 'Contested', replicas: 2 }));
    await nextCycle();
    const [deployment] = await rendered('contested', ns);
    // Another applier takes spec.replicas, forcing it away from the shell operator.
    const intruder = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'website-contested', namespace: ns },
      spec: { replicas: 4 },
    };
    await ok(['apply', '--server-side', '--force-conflicts', '--field-manager=intruder', '-f', '-'], {
      input: JSON.stringify(intruder),
    });
    // Now an apply of the rendered Deployment by the shell operator's field manager conflicts unless forced.
    const unforced = await kubectl(
      ['apply', '--server-side', `--field-manager=${SHELL_OPERATOR_FIELD_MANAGER}`, '--dry-run=server', '-f', '-'],
      { input: JSON.stringify(deployment) },
    );
    expect([unforced.code, unforced.stderr]).toEqual([1, expect.stringContaining('conflict with "intruder"')]);

    const from = loop.lines.length;
    await nextCycle();
    expect(loop.lines.slice(from).map((l) => l.text)).not.toContainEqual(
      expect.stringContaining('website contested: apply failed'),
    );
    const stored = await getJson(['deployment', 'website-contested', '-n', ns, '--show-managed-fields']);
    expect(stored.spec.replicas).toBe(2);
    const owners = stored.metadata.managedFields
      .filter((m: any) => m.fieldsV1?.['f:spec']?.['f:replicas'] !== undefined)
      .map((m: any) => [m.manager, m.operation]);
    expect(owners).toEqual([[SHELL_OPERATOR_FIELD_MANAGER, 'Apply']]);
    await expectAppliedAsRendered('contested', ns);
  });

  test.each(['background', 'foreground'])(
    'deleting a Website (%s) deletes its children, and the loop does not bring them back',
    async (cascade) => {
      const name = `doomed-${cascade}`;
      await create(website(name, ns, { title: 'Doomed', replicas: 2 }));
      await nextCycle();
      expect(await children(name, ns)).toBeDefined();
      await ok(['delete', 'website', name, '-n', ns, `--cascade=${cascade}`, '--wait=false']);
      await eventually(`the children of ${name} to be garbage-collected`, async () =>
        (await gone(name, ns)) ? true : undefined,
      );
      await nextCycle();
      expect(await gone(name, ns)).toBe(true);
    },
  );

  test('one Website failing to apply does not hold up the others, and converges once the cause is gone', async () => {
    // A Deployment in the way with another selector: the selector is immutable, so the apply fails.
    const squatter = testDeployment('blocked', ns);
    const labels = { ...squatter.spec.selector.matchLabels, squatter: 'yes' };
    squatter.spec.selector.matchLabels = labels;
    squatter.spec.template.metadata.labels = labels;
    await create(squatter);
    for (const name of ['blocked', 'unblocked']) await create(website(name, ns, { title: name, replicas: 1 }));
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

  test('leaves the children of a Website being deleted to the garbage collector, even once they are gone', async () => {
    // A finalizer keeps the Website, being deleted, and the garbage collector keeps its children
    // until it is gone: deleted by hand, they must not come back.
    await create(
      website('leaving', ns, { title: 'Leaving', replicas: 1 }, { finalizers: ['website-stack.test/hold'] }),
    );
    await nextCycle();
    expect(await children('leaving', ns)).toBeDefined();
    await ok(['delete', 'website', 'leaving', '-n', ns, '--wait=false']);
    try {
      expect((await getJson(['website', 'leaving', '-n', ns])).metadata.deletionTimestamp).toBeDefined();
      await ok(['delete', 'deployment,service', 'website-leaving', '-n', ns, '--wait=true']);
      await nextCycle();
      expect(await gone('leaving', ns)).toBe(true);
      // The cycle skipped it without counting it, and applied every other Website.
      const others = (await getJson(['websites', '-n', ns])).items.filter(
        (w: any) => !w.metadata.deletionTimestamp,
      ).length;
      expect(loop.cycles().at(-1)!.text).toMatch(
        new RegExp(` cycle done: ${others} Websites, ${others} applied, 0 failed, \\d+ ms$`),
      );
    } finally {
      await ok([
        'patch',
        'website',
        'leaving',
        '-n',
        ns,
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'remove', path: '/metadata/finalizers' }]),
      ]);
    }
  });

  test('survives losing its permission: logs the refused list every cycle, keeps looping, converges when it is back', async () => {
    const binding = await getJson(['rolebinding', 'website-shell-operator', '-n', ns]);
    await ok(['delete', 'rolebinding', 'website-shell-operator', '-n', ns]);
    try {
      await create(website('during-outage', ns, { title: 'Outage', replicas: 1 }));
      await refusedLists(2);
      expect(loop.running()).toBe(true);
      expect(await children('during-outage', ns)).toBeUndefined();
    } finally {
      const {
        resourceVersion: _,
        uid: __,
        creationTimestamp: ___,
        managedFields: ____,
        ...metadata
      } = binding.metadata;
      await ok(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ ...binding, metadata }) });
    }
    await eventually('the children of during-outage', () => children('during-outage', ns), 4 * (INTERVAL + 10) * 1000);
  });

  test('a refused list ends the cycle: nothing is applied until a list succeeds again, though applying is still allowed', async () => {
    await withoutVerb(ns, 'websites', 'list', async () => {
      // From the first refused list on, no cycle that listed before the change is still applying.
      await refusedLists(1);
      await ok(['delete', 'service', 'website-steady', '-n', ns, '--wait=true']);
      await refusedLists(2);
      expect(await can(ns, 'patch', 'services')).toBe('yes');
      expect((await kubectl(['get', 'service', 'website-steady', '-n', ns])).stderr).toContain('NotFound');
    });
    await eventually('the Service of steady, back', () => children('steady', ns), 4 * (INTERVAL + 10) * 1000);
    await expectAppliedAsRendered('steady', ns);
  });
});

describe('the shell operator in a namespace of its own', () => {
  let own: string;
  beforeAll(async () => {
    own = await shellNamespace('shell-own');
  });
  afterAll(() => deleteNamespace(own));

  // Each case takes one verb away, then has the next cycle need it: a new Website needs create
  // (and patch: every apply is a PATCH), an existing one needs patch.
  test.each([
    ['websites', 'list', /cannot list Websites .*cannot list resource "websites"/],
    ['deployments', 'create', /apply failed: .*cannot create resource "deployments"/],
    ['deployments', 'patch', /apply failed: .*cannot patch resource "deployments"/],
    ['services', 'create', /apply failed: .*cannot create resource "services"/],
    ['services', 'patch', /apply failed: .*cannot patch resource "services"/],
  ])('needs every verb of its Role: without %s %s a cycle fails', async (resource, verb, message) => {
    await withoutVerb(own, resource, verb, async () => {
      await create(website(`without-${verb}-${resource}`, own, { title: 'T', replicas: 1 }));
      const run = await once(own);
      expect(run.code).toBe(1);
      expect(run.log.join('\n')).toMatch(message);
    });
    // The positive control: with its Role whole, the same cycle succeeds.
    const run = await once(own);
    expect([run.code, run.log.join('\n')]).toEqual([0, expect.stringMatching(/, 0 failed, /)]);
  });

  test('sleeps 10 seconds between cycles by default and, on SIGTERM during the sleep, stops without another cycle', async () => {
    const run = startShellOperator(cluster, own);
    let cycles = 0;
    try {
      await run.waitForCycles(2, 60_000);
      const [first, second] = run.cycles();
      const cycleMs = Number(/, (\d+) ms$/.exec(second.text)![1]);
      // A lower bound only: the sleep is at least the interval; a slow machine may make it longer.
      expect(second.at - first.at - cycleMs).toBeGreaterThanOrEqual(9_900);
      expect(run.lines[0].text).toMatch(/every 10s as field manager website-shell-operator$/);
      cycles = run.cycles().length;
    } finally {
      const stopped = await run.stop();
      expect(stopped.code).toBe(0);
      expect(run.lines.at(-1)!.text).toMatch(/stopping on signal$/);
    }
    expect(run.cycles().length).toBe(cycles);
  });
});

describe("the shell operator's heartbeat, as its probes check it", () => {
  let own: string;
  let dir: string;
  beforeAll(async () => {
    own = await shellNamespace('shell-heartbeat');
    dir = mkdtempSync(join(tmpdir(), 'heartbeat-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await deleteNamespace(own);
  });

  test('the probe succeeds while the loop runs, fails once the loop stalls (SIGSTOP), and succeeds again when it resumes', async () => {
    // The probe exactly as the Deployment declares it, with the Deployment's environment for its interval.
    const deployment = synth(
      (chart) =>
        new ShellOperator(chart, 'shell', { namespace: own, createNamespace: false, intervalSeconds: INTERVAL }),
    ).find((m) => m.kind === 'Deployment')!;
    const container = deployment.spec.template.spec.containers[0];
    const command: string[] = container.livenessProbe.exec.command;
    expect(container.readinessProbe.exec.command).toEqual(command);
    const env = Object.fromEntries(
      container.env
        .filter((e: { value?: string }) => e.value !== undefined)
        .map((e: { name: string; value: string }) => [e.name, e.value]),
    );
    expect(Number(env.HEARTBEAT_MAX_AGE)).toBe(heartbeatMaxAgeSeconds(INTERVAL));
    const heartbeat = join(dir, 'heartbeat');
    const probe = () =>
      spawnSync(command[0], command.slice(1), {
        env: { PATH: process.env.PATH!, HEARTBEAT: heartbeat, HEARTBEAT_MAX_AGE: env.HEARTBEAT_MAX_AGE },
      }).status;

    const run = startShellOperator(cluster, own, { INTERVAL: String(INTERVAL), HEARTBEAT: heartbeat });
    try {
      await run.waitForCycles(2, 60_000);
      expect(probe()).toBe(0);
      // The loop is the script's bash, a child of scripts/shell-operator.sh.
      const loop = Number(
        execFileSync('pgrep', ['-P', String(run.pid), '-f', 'website-shell-operator.sh'], { encoding: 'utf8' }).trim(),
      );
      expect(loop).toBeGreaterThan(0);
      process.kill(loop, 'SIGSTOP');
      try {
        const stalledAt = run.cycles().length;
        await eventually(
          'the probe to fail on the stalled loop',
          async () => (probe() !== 0 ? true : undefined),
          (Number(env.HEARTBEAT_MAX_AGE) + 30) * 1000,
        );
        expect(run.cycles().length).toBe(stalledAt);
      } finally {
        process.kill(loop, 'SIGCONT');
      }
      await eventually(
        'the probe to succeed again',
        async () => (probe() === 0 ? true : undefined),
        (INTERVAL + 30) * 1000,
      );
      expect(run.running()).toBe(true);
    } finally {
      expect((await run.stop()).code).toBe(0);
    }
  });
});

/** The API server's audit events (harness/cluster/audit-policy.yaml) of `username`, in the order they were logged. */
function auditEvents(username: string): any[] {
  const quoted = JSON.stringify(username);
  return readFileSync(AUDIT_LOG, 'utf8')
    .split('\n')
    .filter((line) => line.includes(quoted))
    .map((line) => JSON.parse(line))
    .filter((event) => event.user?.username === username && event.stage === 'ResponseComplete');
}

describe('the shell operator, one cycle at a time, in namespaces of their own', () => {
  const namespaces: string[] = [];
  afterAll(() => Promise.all(namespaces.map(deleteNamespace)));
  const fresh = async (prefix: string) => {
    const namespace = await shellNamespace(prefix);
    namespaces.push(namespace);
    return namespace;
  };

  test('a cycle is one list, then one server-side apply per child, as its own field manager, forcing conflicts, every request with a 30 s deadline', async () => {
    const namespace = await fresh('shell-requests');
    for (const name of ['a', 'b']) await create(website(name, namespace, { title: name, replicas: 1 }));
    expect((await once(namespace)).code).toBe(0);

    // What the API server received from the ServiceAccount, as its audit log records it.
    const user = `system:serviceaccount:${namespace}:website-shell-operator`;
    const events = await eventually('the cycle in the audit log', async () => {
      const logged = auditEvents(user);
      return logged.filter((e) => e.objectRef).length >= 5 ? logged : undefined;
    });
    const uri = (e: any) => new URL(e.requestURI, 'https://api');
    expect(
      events
        .filter((e) => e.objectRef)
        .map((e) => [e.verb, e.objectRef.resource, e.objectRef.name ?? '', e.responseStatus.code]),
    ).toEqual([
      ['list', 'websites', '', 200],
      ['patch', 'deployments', 'website-a', 201],
      ['patch', 'services', 'website-a', 201],
      ['patch', 'deployments', 'website-b', 201],
      ['patch', 'services', 'website-b', 201],
    ]);
    for (const event of events.filter((e) => e.verb === 'patch')) {
      expect(Object.fromEntries(uri(event).searchParams)).toEqual({
        fieldManager: SHELL_OPERATOR_FIELD_MANAGER,
        force: 'true',
        fieldValidation: 'Ignore',
        timeout: '30s',
      });
    }
    // Besides: only API discovery, which kubectl caches for the cycles after the first.
    expect(events.filter((e) => !e.objectRef).map((e) => [e.verb, uri(e).pathname])).toEqual([
      ['get', '/api'],
      ['get', '/apis'],
    ]);
    expect(events.map((e) => uri(e).searchParams.get('timeout'))).toEqual(events.map(() => '30s'));
    // The patches were applies: both children are managed by its Apply operation.
    for (const kind of ['deployment', 'service']) {
      const managers = (
        await getJson([kind, 'website-a', '-n', namespace, '--show-managed-fields'])
      ).metadata.managedFields.map((m: any) => [m.manager, m.operation]);
      expect(managers).toContainEqual([SHELL_OPERATOR_FIELD_MANAGER, 'Apply']);
    }
  });

  test("logs kubectl's error of several lines on one line, and applies the Websites after the failing one", async () => {
    const namespace = await fresh('shell-quota');
    for (const name of ['a-before', 'c-after']) await create(website(name, namespace, { title: name, replicas: 1 }));
    expect((await once(namespace)).code).toBe(0);
    // No new Deployment or Service fits the namespace's quota: both creates of a new Website fail,
    // and kubectl reports each on a line of its own. Existing children can still be changed.
    const quota = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'none', namespace },
      spec: { hard: { 'count/deployments.apps': '0', services: '0' } },
    };
    await ok(['apply', '-f', '-'], { input: JSON.stringify(quota) });
    await eventually('the quota to be counted', async () =>
      (await getJson(['resourcequota', 'none', '-n', namespace])).status?.hard ? true : undefined,
    );
    for (const name of ['a-before', 'c-after'])
      await ok([
        'patch',
        'website',
        name,
        '-n',
        namespace,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { replicas: 2 } }),
      ]);
    await create(website('b-blocked', namespace, { title: 'Blocked', replicas: 1 }));

    const run = await once(namespace);
    expect(run.code).toBe(1);
    // Every line of the log is one of the script's: a timestamp first.
    for (const line of run.log) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /);
    expect(run.log).toContainEqual(
      expect.stringMatching(
        /^\S+ website b-blocked: apply failed: Error from server \(Forbidden\): deployments\.apps "website-b-blocked" is forbidden: exceeded quota: none, [^\n]* Error from server \(Forbidden\): services "website-b-blocked" is forbidden: exceeded quota: none, [^\n]*$/,
      ),
    );
    expect(run.log.at(-1)).toMatch(/ cycle done: 3 Websites, 2 applied, 1 failed, \d+ ms$/);
    for (const name of ['a-before', 'c-after']) {
      expect((await children(name, namespace))!.deployment.spec.replicas).toBe(2);
      await expectAppliedAsRendered(name, namespace);
    }
    expect(await gone('b-blocked', namespace)).toBe(true);
  });
});

describe('Websites the API server would refuse, stored before it validated them', () => {
  // A Website API of a group of its own, first with no schema for spec, then with dist/'s: what
  // was created in between stays stored as it was, and the operator lists it. The group's name
  // sorts after web.example.com: kubectl resolves a bare `website` to the first group in discovery
  // order (alphabetical among CRDs) and caches discovery for 10 minutes, so every other kubectl
  // call of the test run keeps meaning web.example.com's Websites, even while this one exists.
  const group = `x-shell-${randomBytes(3).toString('hex')}.example.com`;
  const dist = parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-crd.yaml'), 'utf8')).map((d) =>
    d.toJS(),
  )[0];
  const v1 = dist.spec.versions.find((v: any) => v.name === 'v1');
  const anything = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
  const crd = (schema: unknown) => ({
    apiVersion: dist.apiVersion,
    kind: dist.kind,
    metadata: { name: `websites.${group}` },
    spec: {
      group,
      names: { ...dist.spec.names, shortNames: undefined },
      scope: 'Namespaced',
      versions: [{ ...v1, schema }],
      conversion: { strategy: 'None' },
    },
  });
  const applyCrd = (schema: unknown) =>
    ok(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(crd(schema)) });
  const resource = `websites.${group}`;
  let own: string;
  beforeAll(async () => {
    await applyCrd({ openAPIV3Schema: { type: 'object', properties: { spec: anything, status: anything } } });
    await ok(['wait', '--for=condition=Established', '--timeout=60s', `crd/${resource}`]);
    own = await shellNamespace('shell-invalid', group);
  });
  afterAll(async () => {
    await deleteNamespace(own);
    await kubectl(['delete', 'crd', resource, '--ignore-not-found']);
  });

  test('are skipped, each with its reason on one line; the others are applied', async () => {
    const site = (name: string, spec: Record<string, unknown>) => ({
      ...website(name, own, spec),
      apiVersion: `${group}/v1`,
    });
    const bad = [
      site('newline-color', { title: 'T', replicas: 1, color: '#fff\n' }),
      site('named-color', { title: 'T', replicas: 1, color: 'red' }),
      site('no-title', { replicas: 1 }),
    ];
    for (const w of [...bad, site('fine', { title: 'Fine', replicas: 1 })]) await create(w);
    await applyCrd(v1.schema);
    // The API server now refuses each of them...
    for (const w of bad) {
      const again = { ...w, metadata: { ...w.metadata, name: `again-${w.metadata.name}` } };
      await eventually(`the API server to refuse ${again.metadata.name}`, async () => {
        const created = await kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(again) });
        return created.code !== 0 && /is invalid:[\s\S]*\bspec\.(color|title)\b/.test(created.stderr)
          ? true
          : undefined;
      });
    }
    // ...and still stores them as they were.
    const stored = (await getJson([resource, '-n', own])).items;
    expect(Object.fromEntries(stored.map((w: any) => [w.metadata.name, w.spec]))).toMatchObject(
      Object.fromEntries(bad.map((w) => [w.metadata.name, w.spec])),
    );

    const run = await once(own);
    expect(run.code).toBe(1);
    expect(run.log).toContainEqual(
      expect.stringMatching(
        /^\S+ website newline-color: skipped: "spec\.color must be a CSS hex colour such as #2196F3, got \\"#fff\\\\n\\""$/,
      ),
    );
    expect(run.log).toContainEqual(
      expect.stringMatching(
        /^\S+ website named-color: skipped: "spec\.color must be a CSS hex colour such as #2196F3, got \\"red\\""$/,
      ),
    );
    expect(run.log).toContainEqual(
      expect.stringMatching(/^\S+ website no-title: skipped: "spec\.title must be a string"$/),
    );
    expect(run.log.at(-1)).toMatch(/ cycle done: 4 Websites, 1 applied, 3 failed, \d+ ms$/);
    for (const w of bad) expect(await gone(w.metadata.name, own)).toBe(true);
    await expectAppliedAsRendered('fine', own, group);
  });
});
