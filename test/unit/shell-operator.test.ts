import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import {
  expectPodRunsAsBoundServiceAccount,
  expectPodSecurityRestricted,
  hostileTitles,
  type Manifest,
  only,
  synth,
} from '../../harness/manifests.ts';
import {
  DEFAULT_SHELL_OPERATOR_IMAGE,
  HEARTBEAT_CHECK,
  SHELL_OPERATOR_FILES,
  ShellOperator,
  type ShellOperatorProps,
  shellOperatorTemplate,
} from '../../lib/shell-operator/shell-operator.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { renderPage, textColorOn } from '../../lib/workload/page.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(root, 'lib/shell-operator', SHELL_OPERATOR_FILES.script);

function shellOperator(props?: ShellOperatorProps): Manifest[] {
  return synth((chart) => new ShellOperator(chart, 'shell', props));
}

function site(name: string, spec: Partial<WebsiteV1['spec']> = {}): WebsiteV1 {
  return {
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name, namespace: 'team', uid: `uid-${name}` },
    spec: { title: `Title of ${name}`, replicas: 2, ...spec },
  };
}

/** What the WebsiteWorkload construct renders for `website`: [Deployment, Service]. */
function workload(website: WebsiteV1): Manifest[] {
  return synth((chart) => new WebsiteWorkload(chart, 'w', { website }));
}

/** The script's jq program that renders every Website's children (the heredoc RENDER). */
const RENDER = /^read -r -d '' RENDER <<'JQ'\n([\s\S]*?)\nJQ$/m.exec(readFileSync(SCRIPT, 'utf8'))![1];
/** How the script runs it: the Website list on stdin, the construct's template as $template. */
const RENDER_CALL = 'jq -r --slurpfile template "$TEMPLATE" "$RENDER" <"$work/websites.json"';

const scratch = mkdtempSync(join(tmpdir(), 'shell-operator-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const TEMPLATE_FILE = join(scratch, 'template.json');
writeFileSync(TEMPLATE_FILE, JSON.stringify(shellOperatorTemplate()));
// With the platform's Gateway: each Website's HTTPRoute too.
const GATEWAY = { namespace: 'gateway', name: 'public', domain: 'sites.example.com', hostSuffixes: ['example.org'] };
const GATEWAY_TEMPLATE_FILE = join(scratch, 'gateway-template.json');
writeFileSync(GATEWAY_TEMPLATE_FILE, JSON.stringify(shellOperatorTemplate('web.example.com', GATEWAY)));

/**
 * RENDER run by jq, as the script runs it, on a WebsiteList of `websites`: one [name, "apply",
 * List] or [name, "invalid", reason] per Website. Needs no kubectl and no cluster.
 */
function render(websites: WebsiteV1[], template = TEMPLATE_FILE): Array<[string, string, any]> {
  const list = JSON.stringify({ apiVersion: 'web.example.com/v1', kind: 'WebsiteList', items: websites });
  const out = execOk('jq', ['-r', '--slurpfile', 'template', template, RENDER], {}, root, list);
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [name, kind, payload, ...rest] = line.split('\t');
      expect(rest).toEqual([]);
      return [name, kind, JSON.parse(payload)];
    });
}

/** The children rendered for each Website, in order; fails on a Website rendered as invalid. */
function applied(websites: WebsiteV1[], template = TEMPLATE_FILE): Manifest[][] {
  return render(websites, template).map(([name, kind, payload]) => {
    expect([name, kind]).toEqual([name, 'apply']);
    return payload.items;
  });
}

const pageOf = (deployment: Manifest): string =>
  deployment.spec.template.spec.containers[0].env.find((e: Manifest) => e.name === 'WEBSITE_HTML').value;

describe('ShellOperator', () => {
  const manifests = shellOperator();
  const deployment = only(manifests, 'Deployment', 'website-shell-operator');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const configMap = only(manifests, 'ConfigMap', 'website-shell-operator');

  test('creates a namespace that enforces Pod Security restricted, unless told not to', () => {
    expect(only(manifests, 'Namespace').metadata.labels).toEqual({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
    });
    expect(only(manifests, 'Namespace').metadata.name).toBe('website-system');
    expect(shellOperator({ createNamespace: false }).some((m) => m.kind === 'Namespace')).toBe(false);
  });

  test('its Role allows listing Websites and creating and patching Deployments and Services, nothing else', () => {
    const role = only(manifests, 'Role', 'website-shell-operator');
    expect(role.rules).toEqual([
      { apiGroups: ['web.example.com'], resources: ['websites'], verbs: ['list'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['services'], verbs: ['create', 'patch'] },
    ]);
    expect(only(shellOperator({ group: 'sites.acme.io' }), 'Role').rules[0].apiGroups).toEqual(['sites.acme.io']);
  });

  test('binds that Role to its own ServiceAccount, which the pod runs as', () => {
    expect(only(manifests, 'ServiceAccount').metadata).toMatchObject({
      name: 'website-shell-operator',
      namespace: 'website-system',
    });
    expectPodRunsAsBoundServiceAccount(manifests, pod, 'website-shell-operator');
  });

  test('runs one replica of a pinned image with bash, jq and kubectl', () => {
    expect(deployment.spec.replicas).toBe(1);
    expect(container.image).toBe(DEFAULT_SHELL_OPERATOR_IMAGE);
    expect(container.image).toMatch(/^[^:@]+(:\d+\.\d+\.\d+|@sha256:[0-9a-f]{64})$/);
    expect(
      only(shellOperator({ image: 'registry.acme.io/tools:1.2.3' }), 'Deployment').spec.template.spec.containers[0]
        .image,
    ).toBe('registry.acme.io/tools:1.2.3');
  });

  test('pod and container pass Pod Security restricted, with a read-only root and a writable /tmp', () => {
    expectPodSecurityRestricted(pod);
    expect(pod.securityContext.runAsUser).toBe(65532);
    expect(container.volumeMounts).toEqual([
      { name: 'config', mountPath: '/etc/website-shell-operator', readOnly: true },
      { name: 'tmp', mountPath: '/tmp' },
    ]);
    expect(pod.volumes).toEqual([
      { name: 'config', configMap: { name: 'website-shell-operator' } },
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
    ]);
    expect(container.resources).toEqual({ requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } });
  });

  test('runs the script from the ConfigMap with its namespace, template, 10 s interval, field manager and heartbeat file', () => {
    expect(container.command).toEqual(['bash', '/etc/website-shell-operator/website-shell-operator.sh']);
    expect(container.env).toEqual([
      { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'TEMPLATE', value: '/etc/website-shell-operator/children-template.json' },
      { name: 'INTERVAL', value: '10' },
      { name: 'FIELD_MANAGER', value: 'website-shell-operator' },
      { name: 'HOME', value: '/tmp' },
      { name: 'HEARTBEAT', value: '/tmp/heartbeat' },
      { name: 'HEARTBEAT_MAX_AGE', value: '60' },
    ]);
    const env = only(shellOperator({ intervalSeconds: 30 }), 'Deployment').spec.template.spec.containers[0].env;
    expect(env.find((e: Manifest) => e.name === 'INTERVAL').value).toBe('30');
  });

  test('the ConfigMap holds the script file verbatim and the template for its group', () => {
    expect(configMap.data['website-shell-operator.sh']).toBe(readFileSync(SCRIPT, 'utf8'));
    expect(JSON.parse(configMap.data['children-template.json'])).toEqual(shellOperatorTemplate());
    const custom = only(shellOperator({ group: 'sites.acme.io' }), 'ConfigMap');
    expect(JSON.parse(custom.data['children-template.json'])).toMatchObject({ group: 'sites.acme.io' });
  });

  test('a changed ConfigMap rolls the pod (bash reads the script once)', () => {
    const hash = (m: Manifest[]) =>
      only(m, 'Deployment').spec.template.metadata.annotations['website-stack/config-sha256'];
    expect(hash(manifests)).toMatch(/^[0-9a-f]{64}$/);
    expect(hash(shellOperator({ group: 'sites.acme.io' }))).not.toBe(hash(manifests));
  });

  test('liveness and readiness check the heartbeat the loop writes, allowing three intervals and one request deadline', () => {
    const probe = { exec: { command: HEARTBEAT_CHECK }, periodSeconds: 10, failureThreshold: 3, timeoutSeconds: 5 };
    expect(container.livenessProbe).toEqual(probe);
    expect(container.readinessProbe).toEqual(probe);
    const env = only(shellOperator({ intervalSeconds: 30 }), 'Deployment').spec.template.spec.containers[0].env;
    expect(env.find((e: Manifest) => e.name === 'HEARTBEAT_MAX_AGE').value).toBe('120');
  });

  test('a NetworkPolicy lets nothing in and only the API server and DNS out, besides the default deny', () => {
    const policies = manifests.filter((m) => m.kind === 'NetworkPolicy');
    expect(policies.map((p) => p.metadata.name).sort()).toEqual([
      'website-shell-operator',
      'website-stack-default-deny',
    ]);
    const own = only(manifests, 'NetworkPolicy', 'website-shell-operator');
    expect(own.spec.podSelector).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'website-shell-operator' } });
    expect(own.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(own.spec.ingress).toEqual([]);
    expect(own.spec.egress).toEqual([
      {
        ports: [
          { protocol: 'TCP', port: 443 },
          { protocol: 'TCP', port: 6443 },
        ],
      },
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
    ]);
    const narrowed = only(
      shellOperator({
        networkPolicyOptions: { apiServer: { peers: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [6443] } },
      }),
      'NetworkPolicy',
      'website-shell-operator',
    );
    expect(narrowed.spec.egress[0]).toEqual({
      to: [{ ipBlock: { cidr: '10.0.0.1/32' } }],
      ports: [{ protocol: 'TCP', port: 6443 }],
    });
    expect(shellOperator({ networkPolicy: false }).some((m) => m.kind === 'NetworkPolicy')).toBe(false);
  });

  test('refuses an interval that is not a whole number of seconds', () => {
    expect(() => shellOperator({ intervalSeconds: 0 })).toThrow(
      /intervalSeconds must be a whole number of seconds >= 1, got 0/,
    );
    expect(() => shellOperator({ intervalSeconds: 2.5 })).toThrow(/at 'test\/shell'/);
  });

  test('the ConfigMap carries the script file byte for byte (npm run codegen compiles it in)', () => {
    const configMap = only(
      synth((chart) => new ShellOperator(chart, 'shell')),
      'ConfigMap',
    );
    expect(configMap.data[SHELL_OPERATOR_FILES.script]).toBe(readFileSync(SCRIPT, 'utf8'));
  });
});

function execOk(command: string, args: string[], env: Record<string, string> = {}, cwd = root, input?: string): string {
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    input,
    maxBuffer: 256 << 20,
  });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

// The script itself runs on the local cluster with the real kubectl, under its ServiceAccount
// (test/cluster/shell-operator.test.ts). Here: its jq program alone, which needs no kubectl.
describe("the script's render program (jq, no kubectl)", () => {
  test('is the jq program the script renders every cycle with, on the listed Websites', () => {
    expect(readFileSync(SCRIPT, 'utf8')).toContain(RENDER_CALL);
    expect(RENDER).toContain('$template[0] as $t');
  });

  test("renders each Website's Deployment and Service exactly as WebsiteWorkload does, with nothing of the placeholder left", () => {
    const websites = [
      site('hello'),
      site('colors', { color: '#abc', replicas: 5 }),
      site('upper', { color: '#FFEB3B', replicas: 1 }),
      site('no-color', { replicas: 3 }),
    ];
    const lists = applied(websites);
    expect(lists).toEqual(websites.map(workload));
    expect(JSON.stringify(lists)).not.toContain('placeholder');
  });

  test("with a Gateway, each Website's HTTPRoute too, for the host WebsiteWorkload is given; a host not allowed skips the Website", () => {
    const websites = [site('hello'), site('own', { host: 'shop.example.org' }), site('sub', { host: 'example.org' })];
    const hosts = ['hello-team.sites.example.com', 'shop.example.org', 'example.org'];
    expect(applied(websites, GATEWAY_TEMPLATE_FILE)).toEqual(
      websites.map((website, i) =>
        synth((chart) => new WebsiteWorkload(chart, 'w', { website, route: { gateway: GATEWAY, host: hosts[i] } })),
      ),
    );
    expect(render([site('elsewhere', { host: 'shop.example.com' })], GATEWAY_TEMPLATE_FILE)).toEqual([
      [
        'elsewhere',
        'invalid',
        'spec.host "shop.example.com" is not allowed: it must be under example.org (the hosts this operator allows), or removed for the default host',
      ],
    ]);
    // A default host with a part past 63 characters: skipped, saying what to do, as the operator refuses it.
    expect(render([site('a'.repeat(59))], GATEWAY_TEMPLATE_FILE)).toEqual([
      [
        'a'.repeat(59),
        'invalid',
        `the default host ${'a'.repeat(59)}-team.sites.example.com is not a host name (a part between dots is longer than 63 characters): set spec.host to a host under example.org, or give the Website a shorter name`,
      ],
    ]);
    expect(shellOperator({ gateway: GATEWAY }).find((m) => m.kind === 'Role')!.rules).toContainEqual({
      apiGroups: ['gateway.networking.k8s.io'],
      resources: ['httproutes'],
      verbs: ['create', 'patch'],
    });
  });

  test('renders hostile titles as renderPage escapes them', () => {
    const titles = hostileTitles((n) => `/tmp/pwned-${n}`);
    const websites = titles.map((title, i) => site(`hostile-${i}`, { title, color: '#000' }));
    const lists = applied(websites);
    expect(lists).toEqual(websites.map(workload));
    expect(lists.map((items) => pageOf(items[0]))).toEqual(titles.map((title) => renderPage(title, '#000')));
  });

  test('equals WebsiteWorkload for any title, colour and replica count', () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{3}$|^[0-9a-fA-F]{6}$/).map((h) => `#${h}`);
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            title: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }),
            color: fc.option(hex, { nil: undefined }),
            replicas: fc.integer({ min: 1, max: 5 }),
          }),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        (specs) => {
          const websites = specs.map((spec, i) =>
            site(`w${i}`, spec.color === undefined ? { title: spec.title, replicas: spec.replicas } : spec),
          );
          expect(applied(websites)).toEqual(websites.map(workload));
        },
      ),
      { numRuns: 30 },
    );
  });

  test('picks the same text colour as textColorOn: every channel value, and both sides of the black/white boundary', () => {
    const byte = (n: number) => n.toString(16).padStart(2, '0');
    // Greys use each of the 256 channel values in all three channels.
    const greys = Array.from({ length: 256 }, (_, n) => `#${byte(n)}${byte(n)}${byte(n)}`);
    // For a grid of red and green, the two blue values where the choice flips: any difference in
    // the weights or the comparison moves some of these flips.
    const boundary: string[] = [];
    for (let r = 0; r < 256; r += 7) {
      for (let g = 0; g < 256; g += 7) {
        const flip = Array.from({ length: 255 }, (_, i) => i + 1).find(
          (b) => textColorOn(`#${byte(r)}${byte(g)}${byte(b)}`) !== textColorOn(`#${byte(r)}${byte(g)}00`),
        );
        if (flip !== undefined)
          boundary.push(`#${byte(r)}${byte(g)}${byte(flip - 1)}`, `#${byte(r)}${byte(g)}${byte(flip)}`);
      }
    }
    const short = Array.from({ length: 16 }, (_, n) => `#${n.toString(16)}F${n.toString(16)}`);
    const colors = [...greys, ...boundary, ...short];
    expect(boundary.length).toBeGreaterThan(300);
    const chosen = applied(colors.map((color, i) => site(`c${i}`, { color, replicas: 1 }))).map(
      (items) => /body \{ background: #[0-9a-fA-F]+; color: (#[0-9a-f]{6});/.exec(pageOf(items[0]))![1],
    );
    expect(chosen).toEqual(colors.map(textColorOn));
  });
});

describe("the heartbeat check the kubelet runs (the probes' command, run here with bash)", () => {
  const maxAge = 60;
  const check = (content: string | undefined) => {
    const file = join(scratch, `heartbeat-${Math.random().toString(36).slice(2)}`);
    if (content !== undefined) writeFileSync(file, content);
    return spawnSync(HEARTBEAT_CHECK[0], HEARTBEAT_CHECK.slice(1), {
      env: { PATH: process.env.PATH!, HEARTBEAT: file, HEARTBEAT_MAX_AGE: String(maxAge) },
      encoding: 'utf8',
    }).status;
  };
  const now = () => Math.floor(Date.now() / 1000);

  test('succeeds on a heartbeat up to the maximum age old', () => {
    expect(check(`${now()}\n`)).toBe(0);
    expect(check(`${now() - maxAge + 5}\n`)).toBe(0);
  });

  test('fails on an older heartbeat, a missing file, and a file holding no time', () => {
    expect(check(`${now() - maxAge - 5}\n`)).not.toBe(0);
    expect(check(undefined)).not.toBe(0);
    expect(check('')).not.toBe(0);
    expect(check('$(touch /tmp/x)\n')).not.toBe(0);
  });
});

describe('the script without a cluster: bad settings refused, the heartbeat written', () => {
  // KUBECTL names no program: a script that got as far as looking for kubectl would say so instead.
  const run = (env: Record<string, string>) =>
    spawnSync('bash', [SCRIPT], {
      env: { PATH: process.env.PATH!, KUBECTL: join(scratch, 'no-kubectl'), ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });

  test('without NAMESPACE or TEMPLATE it says which is missing', () => {
    const noNamespace = run({ TEMPLATE: TEMPLATE_FILE });
    expect(noNamespace.status).not.toBe(0);
    expect(noNamespace.stderr).toContain(
      'NAMESPACE: set NAMESPACE to the namespace whose Websites this operator reconciles',
    );
    const emptyNamespace = run({ NAMESPACE: '', TEMPLATE: TEMPLATE_FILE });
    expect(emptyNamespace.status).not.toBe(0);
    expect(emptyNamespace.stderr).toContain('set NAMESPACE to the namespace whose Websites this operator reconciles');
    const noTemplate = run({ NAMESPACE: 'team' });
    expect(noTemplate.status).not.toBe(0);
    expect(noTemplate.stderr).toContain(
      'TEMPLATE: set TEMPLATE to the children template JSON written by the ShellOperator construct',
    );
  });

  test('a heartbeat file it cannot write is refused at start, naming it', () => {
    const result = run({
      NAMESPACE: 'team',
      TEMPLATE: TEMPLATE_FILE,
      KUBECTL: 'true',
      HEARTBEAT: join(scratch, 'no-such-dir', 'heartbeat'),
    });
    expect([result.status, result.stderr]).toEqual([
      2,
      expect.stringContaining(`cannot write the heartbeat file HEARTBEAT=${join(scratch, 'no-such-dir', 'heartbeat')}`),
    ]);
  });

  test('a cycle writes the time into the heartbeat file as it starts, even a cycle that fails', () => {
    const heartbeat = join(scratch, 'heartbeat-cycle');
    const before = Math.floor(Date.now() / 1000);
    // kubectl that fails every call: the cycle cannot list, logs it, and ONCE=1 exits 1.
    const result = run({
      NAMESPACE: 'team',
      TEMPLATE: TEMPLATE_FILE,
      KUBECTL: 'false',
      HEARTBEAT: heartbeat,
      ONCE: '1',
    });
    expect([result.status, result.stderr]).toEqual([
      1,
      expect.stringContaining('cannot list Websites in namespace team'),
    ]);
    const beat = Number(readFileSync(heartbeat, 'utf8'));
    expect(beat).toBeGreaterThanOrEqual(before);
    expect(beat).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  test('an interval that is not a whole number of seconds is refused, and never run as code', () => {
    const marker = join(scratch, 'pwned-interval');
    for (const interval of [`1; touch ${marker}`, '0', '2.5', `$(touch ${marker})`]) {
      const result = run({ NAMESPACE: 'team', TEMPLATE: TEMPLATE_FILE, INTERVAL: interval });
      expect([result.status, result.stderr]).toEqual([
        2,
        expect.stringContaining(`INTERVAL must be a whole number of seconds >= 1, got '${interval}'`),
      ]);
    }
    expect(existsSync(marker)).toBe(false);
  });
});
