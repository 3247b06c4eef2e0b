import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { type Manifest, only, synth } from '../helpers.ts';
import {
  DEFAULT_SHELL_OPERATOR_IMAGE,
  SHELL_OPERATOR_FILES,
  ShellOperator,
  type ShellOperatorProps,
  shellOperatorTemplate,
} from '../../lib/shell-operator/shell-operator.ts';
import { renderPage, textColorOn } from '../../lib/workload/page.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPT = join(root, 'lib/shell-operator', SHELL_OPERATOR_FILES.script);

function shellOperator(props?: ShellOperatorProps): Manifest[] {
  return synth((chart) => new ShellOperator(chart, 'shell', props));
}

function site(name: string, spec: Partial<WebsiteV1['spec']> = {}, metadata: Record<string, unknown> = {}): WebsiteV1 {
  return {
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name, namespace: 'team', uid: `uid-${name}`, ...metadata },
    spec: { title: `Title of ${name}`, replicas: 2, ...spec },
  };
}

/** What the WebsiteWorkload construct renders for `website`: [Deployment, Service]. */
function workload(website: WebsiteV1): Manifest[] {
  return synth((chart) => new WebsiteWorkload(chart, 'w', { website }));
}

// Stands in for kubectl: serves the Website list, records every call and every applied List, and
// fails on demand (the first N lists; the apply of one named Website).
const FAKE_KUBECTL = `#!/usr/bin/env bash
printf '%s\\n' "$*" >>"$FAKE_DIR/calls"
for arg; do
  case $arg in
    get)
      left=$(cat "$FAKE_DIR/get-failures" 2>/dev/null || echo 0)
      if (( left > 0 )); then
        echo $((left - 1)) >"$FAKE_DIR/get-failures"
        echo 'Unable to connect to the server: dial tcp 10.0.0.1:443: connect: connection refused' >&2
        exit 1
      fi
      cat "$FAKE_DIR/websites.json"
      exit 0 ;;
    apply)
      input=$(cat)
      if [[ -f $FAKE_DIR/apply-fails ]] && grep -qF "\\"app.kubernetes.io/instance\\":\\"$(cat "$FAKE_DIR/apply-fails")\\"" <<<"$input"; then
        printf 'The Deployment "website-x" is invalid:\\nspec.selector: Invalid value: field is immutable\\n' >&2
        exit 1
      fi
      printf '%s\\n' "$input" >>"$FAKE_DIR/applied.jsonl"
      exit 0 ;;
  esac
done
echo "fake kubectl: unexpected call: $*" >&2
exit 1
`;

interface Fake {
  dir: string;
  env: Record<string, string>;
  applied(): Manifest[];
  calls(): string[];
}

function fake(websites: WebsiteV1[], options: { getFailures?: number; applyFails?: string } = {}): Fake {
  const dir = mkdtempSync(join(tmpdir(), 'shell-operator-'));
  writeFileSync(join(dir, 'kubectl'), FAKE_KUBECTL, { mode: 0o755 });
  writeFileSync(join(dir, 'websites.json'), JSON.stringify({ apiVersion: 'web.example.com/v1', kind: 'WebsiteList', items: websites }));
  writeFileSync(join(dir, 'template.json'), JSON.stringify(shellOperatorTemplate()));
  if (options.getFailures) writeFileSync(join(dir, 'get-failures'), String(options.getFailures));
  if (options.applyFails) writeFileSync(join(dir, 'apply-fails'), options.applyFails);
  const read = (file: string) => (existsSync(join(dir, file)) ? readFileSync(join(dir, file), 'utf8').split('\n').filter(Boolean) : []);
  return {
    dir,
    env: { PATH: process.env.PATH!, FAKE_DIR: dir, KUBECTL: join(dir, 'kubectl'), NAMESPACE: 'team', TEMPLATE: join(dir, 'template.json') },
    applied: () => read('applied.jsonl').map((line) => JSON.parse(line)),
    calls: () => read('calls'),
  };
}

const fakes: Fake[] = [];
afterAll(() => fakes.forEach((f) => rmSync(f.dir, { recursive: true, force: true })));

/** One cycle of the real script (ONCE=1) against the stand-in kubectl. */
function cycle(websites: WebsiteV1[], options: { getFailures?: number; applyFails?: string; env?: Record<string, string> } = {}) {
  const f = fake(websites, options);
  fakes.push(f);
  const result = spawnSync('bash', [SCRIPT], { env: { ...f.env, ONCE: '1', ...options.env }, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, stderr: result.stderr, applied: f.applied(), calls: f.calls(), dir: f.dir };
}

const hostileTitles = (marker: string) => [
  `$(touch ${marker})`,
  `\`touch ${marker}\``,
  `"; touch ${marker}; echo "`,
  `'; touch ${marker}; echo '`,
  `line one\ntouch ${marker}\nline three`,
  `\\(env) \\u0000 back\\slash \\n ${'$'}{HOME} $HOME`,
  '<script>alert("x")</script> & &amp; <b>bold</b>',
  'tab\there, emoji 🚀🌈, ünïcödé, 中文',
  '\t\tleading tabs',
  '--server-side --dry-run=server',
  '#'.repeat(4096),
];

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
    expect(only(manifests, 'ServiceAccount').metadata).toMatchObject({ name: 'website-shell-operator', namespace: 'website-system' });
    const binding = only(manifests, 'RoleBinding');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'website-shell-operator' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'website-shell-operator', namespace: 'website-system' }]);
    expect(pod.serviceAccountName).toBe('website-shell-operator');
    expect(pod.automountServiceAccountToken).toBe(true);
  });

  test('runs one replica of a pinned image with bash, jq and kubectl', () => {
    expect(deployment.spec.replicas).toBe(1);
    expect(container.image).toBe(DEFAULT_SHELL_OPERATOR_IMAGE);
    expect(container.image).toMatch(/^[^:@]+(:\d+\.\d+\.\d+|@sha256:[0-9a-f]{64})$/);
    expect(only(shellOperator({ image: 'registry.acme.io/tools:1.2.3' }), 'Deployment').spec.template.spec.containers[0].image).toBe(
      'registry.acme.io/tools:1.2.3',
    );
  });

  test('pod and container pass Pod Security restricted, with a read-only root and a writable /tmp', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
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

  test('runs the script from the ConfigMap with its namespace, template, 10 s interval and field manager', () => {
    expect(container.command).toEqual(['bash', '/etc/website-shell-operator/website-shell-operator.sh']);
    expect(container.env).toEqual([
      { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'TEMPLATE', value: '/etc/website-shell-operator/children-template.json' },
      { name: 'INTERVAL', value: '10' },
      { name: 'FIELD_MANAGER', value: 'website-shell-operator' },
      { name: 'HOME', value: '/tmp' },
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
    const hash = (m: Manifest[]) => only(m, 'Deployment').spec.template.metadata.annotations['website-stack/config-sha256'];
    expect(hash(manifests)).toMatch(/^[0-9a-f]{64}$/);
    expect(hash(shellOperator({ group: 'sites.acme.io' }))).not.toBe(hash(manifests));
  });

  test('refuses an interval that is not a whole number of seconds', () => {
    expect(() => shellOperator({ intervalSeconds: 0 })).toThrow(/intervalSeconds must be a whole number of seconds >= 1, got 0/);
    expect(() => shellOperator({ intervalSeconds: 2.5 })).toThrow(/at 'test\/shell'/);
  });

  test('the compiled package ships the script and synthesizes the shell operator', () => {
    const dir = mkdtempSync(join(tmpdir(), 'shell-build-'));
    try {
      // The same command as `npm run build`, into a temporary directory.
      execOk('bash', [join(root, 'scripts/build.sh'), join(dir, 'build')], { PATH: `${join(root, 'node_modules/.bin')}:${process.env.PATH}` });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'website-stack', type: 'module', exports: './build/lib/index.js' }));
      spawnSync('ln', ['-s', join(root, 'node_modules'), join(dir, 'node_modules')]);
      writeFileSync(
        join(dir, 'use.mjs'),
        [
          "import { App, Chart } from 'cdk8s';",
          "import { ShellOperator } from 'website-stack';",
          "const chart = new Chart(new App({ outdir: '/nonexistent' }), 'c');",
          "new ShellOperator(chart, 'shell');",
          "process.stdout.write(chart.toJson().find((m) => m.kind === 'ConfigMap').data['website-shell-operator.sh']);",
        ].join('\n'),
      );
      const out = execOk(join(root, 'node_modules/.bin/node'), [join(dir, 'use.mjs')], {}, dir);
      expect(out).toBe(readFileSync(SCRIPT, 'utf8'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function execOk(command: string, args: string[], env: Record<string, string> = {}, cwd = root): string {
  const result = spawnSync(command, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

describe('the script, one cycle against a stand-in kubectl', () => {
  test("applies each Website's Deployment and Service exactly as WebsiteWorkload renders them", () => {
    const websites = [
      site('hello'),
      site('colors', { color: '#abc', replicas: 5 }),
      site('upper', { color: '#FFEB3B', replicas: 1 }),
      site('no-color', { replicas: 3 }),
    ];
    const run = cycle(websites);
    expect([run.status, run.stderr]).toEqual([0, expect.stringContaining('cycle done: 4 Websites, 4 applied, 0 failed')]);
    expect(run.applied.map((list) => list.items)).toEqual(websites.map(workload));
    expect(JSON.stringify(run.applied)).not.toContain('placeholder');
  });

  test('server-side applies with its own field manager, forcing conflicts, in one kubectl call per Website', () => {
    const run = cycle([site('a'), site('b')]);
    const applies = run.calls.filter((c) => c.includes(' apply '));
    expect(applies).toHaveLength(2);
    for (const call of applies) {
      expect(call.split(' ')).toEqual(
        expect.arrayContaining(['apply', '--server-side', '--force-conflicts', '--field-manager=website-shell-operator', '--filename=-', '--request-timeout=30s']),
      );
    }
    expect(run.calls[0]).toBe('--request-timeout=30s get websites.v1.web.example.com --namespace team --output json');
  });

  test('renders hostile titles literally, escaped as renderPage escapes them, and executes nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pwned-'));
    const marker = join(dir, 'pwned');
    try {
      const titles = hostileTitles(marker);
      const websites = titles.map((title, i) => site(`hostile-${i}`, { title, color: '#000' }));
      const run = cycle(websites);
      expect(run.status).toBe(0);
      expect(run.applied.map((list) => list.items)).toEqual(websites.map(workload));
      const pages = run.applied.map((list) => list.items[0].spec.template.spec.containers[0].env.find((e: Manifest) => e.name === 'WEBSITE_HTML').value);
      expect(pages).toEqual(titles.map((title) => renderPage(title, '#000')));
      expect(existsSync(marker)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('equals WebsiteWorkload for any title, colour and replica count', () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{3}$|^[0-9a-fA-F]{6}$/).map((h) => `#${h}`);
    fc.assert(
      fc.property(
        fc.array(fc.record({ title: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }), color: fc.option(hex, { nil: undefined }), replicas: fc.integer({ min: 1, max: 5 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        (specs) => {
          const websites = specs.map((spec, i) => site(`w${i}`, spec.color === undefined ? { title: spec.title, replicas: spec.replicas } : spec));
          const run = cycle(websites);
          expect(run.status).toBe(0);
          expect(run.applied.map((list) => list.items)).toEqual(websites.map(workload));
        },
      ),
      { numRuns: 15 },
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
        const flip = Array.from({ length: 255 }, (_, i) => i + 1).find((b) => textColorOn(`#${byte(r)}${byte(g)}${byte(b)}`) !== textColorOn(`#${byte(r)}${byte(g)}00`));
        if (flip !== undefined) boundary.push(`#${byte(r)}${byte(g)}${byte(flip - 1)}`, `#${byte(r)}${byte(g)}${byte(flip)}`);
      }
    }
    const short = Array.from({ length: 16 }, (_, n) => `#${n.toString(16)}F${n.toString(16)}`);
    const colors = [...greys, ...boundary, ...short];
    expect(boundary.length).toBeGreaterThan(300);
    const run = cycle(colors.map((color, i) => site(`c${i}`, { color, replicas: 1 })));
    const chosen = run.applied.map(
      (list) =>
        /body \{ background: #[0-9a-fA-F]+; color: (#[0-9a-f]{6});/.exec(
          list.items[0].spec.template.spec.containers[0].env.find((e: Manifest) => e.name === 'WEBSITE_HTML').value,
        )![1],
    );
    expect(chosen).toEqual(colors.map(textColorOn));
  });

  test('a Website whose apply fails is logged on one line; the others are still applied', () => {
    const run = cycle([site('first'), site('blocked'), site('last')], { applyFails: 'blocked' });
    expect(run.status).toBe(1);
    expect(run.applied.map((list) => list.items[0].metadata.name)).toEqual(['website-first', 'website-last']);
    expect(run.stderr).toMatch(/^\S+ website blocked: apply failed: The Deployment "website-x" is invalid: spec\.selector: Invalid value: field is immutable$/m);
    expect(run.stderr).toContain('cycle done: 3 Websites, 2 applied, 1 failed');
  });

  test('skips, with a reason, a Website the API server would not have admitted; the others are applied', () => {
    const bad = [site('newline-color', { color: '#fff\n' }), site('named-color', { color: 'red' }), site('no-title', { title: undefined as unknown as string })];
    const run = cycle([...bad, site('fine')]);
    expect(run.status).toBe(1);
    expect(run.applied.map((list) => list.items[0].metadata.name)).toEqual(['website-fine']);
    expect(run.stderr).toContain('website newline-color: skipped: "spec.color must be a CSS hex colour such as #2196F3, got \\"#fff\\\\n\\""');
    expect(run.stderr).toContain('website named-color: skipped: "spec.color must be a CSS hex colour such as #2196F3, got \\"red\\""');
    expect(run.stderr).toContain('website no-title: skipped: "spec.title must be a string"');
  });

  test('leaves the children of a Website being deleted to the garbage collector', () => {
    const run = cycle([site('leaving', {}, { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['x/y'] }), site('staying')]);
    expect(run.status).toBe(0);
    expect(run.applied.map((list) => list.items[0].metadata.name)).toEqual(['website-staying']);
  });

  test('a failed list is logged and the cycle ends without applying anything', () => {
    const run = cycle([site('a')], { getFailures: 1 });
    expect(run.status).toBe(1);
    expect(run.applied).toEqual([]);
    expect(run.stderr).toMatch(/cannot list Websites in namespace team, retrying in 10s: Unable to connect to the server: .* connection refused/);
  });

  test('explains a missing setting or a bad interval instead of starting', () => {
    const noNamespace = cycle([], { env: { NAMESPACE: '' } });
    expect(noNamespace.status).not.toBe(0);
    expect(noNamespace.stderr).toContain('set NAMESPACE to the namespace whose Websites this operator reconciles');
    const badInterval = cycle([], { env: { INTERVAL: '1; touch /tmp/x' } });
    expect(badInterval.status).toBe(2);
    expect(badInterval.stderr).toContain("INTERVAL must be a whole number of seconds >= 1, got '1; touch /tmp/x'");
  });
});

describe('the script, looping forever against a stand-in kubectl', () => {
  test('survives failing lists, converges when the API answers again, and stops at once on SIGTERM', async () => {
    const f = fake([site('patient')], { getFailures: 2 });
    fakes.push(f);
    const child = spawn('bash', [SCRIPT], { env: { ...f.env, INTERVAL: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 30_000;
      while (f.applied().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(f.applied().map((list) => list.items[0].metadata.name)).toEqual(['website-patient']);
      expect(stderr.match(/cannot list Websites/g)).toHaveLength(2);
      // Now in its 1 s sleep, or about to be: TERM ends it well before another interval passes.
      await new Promise((r) => setTimeout(r, 200));
      const start = Date.now();
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(Date.now() - start).toBeLessThan(900);
      expect(stderr).toContain('stopping on signal');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
