// The release workflow (.github/workflows/release.yml) cannot run here: it needs GitHub's runners and
// registry. What can be checked locally is checked: actionlint (built from its Go module by
// scripts/binaries.sh, and running shellcheck on the run: scripts when shellcheck is on PATH) finds
// nothing in it and does find mistakes in a broken copy; the trigger, platforms, SBOM, provenance and
// permissions are what a release needs; its two shell steps do what they say when run with bash; and
// the packages job builds with `npm run package` (what test/package/polyglot-apps.test.ts runs) and
// publishes each folder of it only on a tag.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = fileURLToPath(new URL('../..', import.meta.url));
const workflowFile = join(root, '.github/workflows/release.yml');
const source = readFileSync(workflowFile, 'utf8');

interface Step {
  name?: string;
  if?: string;
  id?: string;
  uses?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Job {
  if?: string;
  needs?: string;
  permissions?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: unknown;
  jobs: Record<string, Job>;
}

const workflow = parse(source) as Workflow;
const jobs = Object.values(workflow.jobs);
const steps = jobs.flatMap((job) => job.steps);
const action = (name: string) => steps.findIndex((step) => step.uses?.split('@')[0] === name);
const step = (name: string) => {
  const index = action(name);
  if (index < 0) throw new Error(`no step uses ${name}`);
  return steps[index];
};

let actionlint: string;
let dir: string;
beforeAll(() => {
  // Cached by version: a cold build (Go module download and compile) takes about half a minute; it
  // waits for any other build of scripts/binaries.sh holding its lock.
  const out = execFileSync('bash', [join(root, 'scripts/binaries.sh'), 'actionlint'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  actionlint = out.match(/^actionlint=(.+)$/m)![1];
}, 900_000);
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'release-workflow-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

interface Finding {
  message: string;
  line: number;
  kind: string;
}

/** actionlint on `files` (all of .github/workflows/ when none), from `cwd`: its exit code and findings. */
function lint(cwd: string, files: string[] = []) {
  const result = spawnSync(actionlint, ['-no-color', '-format', '{{json .}}', ...files], { cwd, encoding: 'utf8' });
  const findings = result.stdout.trim() ? (JSON.parse(result.stdout) as Finding[]) : [];
  return { code: result.status, findings, stderr: result.stderr };
}

/** A step's run: script run as GitHub runs it (bash -eo pipefail), in `cwd`. */
function runStep(script: string, cwd: string, env: Record<string, string>) {
  const result = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], {
    cwd,
    env: { PATH: process.env.PATH!, ...env },
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('.github/workflows/release.yml', () => {
  test('actionlint finds nothing in .github/workflows', () => {
    const result = lint(root);
    expect(result.findings.map((f) => `${f.line}: ${f.message} [${f.kind}]`)).toEqual([]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  // Each mistake on its own in a copy of the workflow: actionlint must report it, or the test above proves nothing.
  test.each([
    ['a misspelt step id in an expression', 'steps.build.outputs.digest', 'steps.biuld.outputs.digest', 'expression'],
    [
      'an output build-push-action does not have',
      'steps.build.outputs.digest',
      'steps.build.outputs.sha256',
      'expression',
    ],
    ['an input build-push-action does not take', '          sbom: true', '          sboms: true', 'action'],
    ['an unknown permission', '      packages: write', '      package: write', 'permissions'],
    ['an unknown event', '  push:\n    tags:', '  pushed:\n    tags:', 'events'],
  ])('actionlint reports %s', (_what, from, to, kind) => {
    expect(source).toContain(from);
    const workflows = join(dir, '.github/workflows');
    mkdirSync(workflows, { recursive: true });
    writeFileSync(join(workflows, 'release.yml'), source.replace(from, to));
    const result = lint(dir, ['.github/workflows/release.yml']);
    expect(result.code).toBe(1);
    expect(result.findings.map((f) => f.kind)).toContain(kind);
  });

  // shellcheck is optional for actionlint (scripts/system-deps.sh installs it for `npm test`).
  const shellcheck = spawnSync('shellcheck', ['--version']).status === 0;
  (shellcheck ? test : test.skip)('actionlint runs shellcheck on the run: scripts (an unquoted $GITHUB_OUTPUT)', () => {
    expect(source).toContain('>>"$GITHUB_OUTPUT"');
    const broken = join(dir, 'release.yml');
    writeFileSync(broken, source.replace('>>"$GITHUB_OUTPUT"', '>>$GITHUB_OUTPUT'));
    const result = lint(dir, [broken]);
    expect(result.code).toBe(1);
    expect(result.findings.map((f) => f.message)).toEqual([expect.stringContaining('SC2086')]);
  });

  test('runs on version tags, and by hand as a dry run; no branch or pull request', () => {
    expect(workflow.on).toEqual({ push: { tags: ['v*.*.*'] }, workflow_dispatch: null });
    // GitHub's glob, where * matches anything but '/'.
    const [glob] = (workflow.on.push as { tags: string[] }).tags;
    const pattern = new RegExp(`^${glob.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}$`);
    for (const tag of ['v0.1.0', 'v1.2.3', 'v1.2.3-rc.1']) expect(tag).toMatch(pattern);
    for (const tag of ['v1', 'v1.2', '1.2.3', 'release-1.2.3', 'latest']) expect(tag).not.toMatch(pattern);
  });

  test('builds linux/amd64 and linux/arm64 and pushes them with an SBOM and max-mode provenance', () => {
    const build = step('docker/build-push-action').with!;
    expect(
      String(build.platforms)
        .split(',')
        .map((p) => p.trim())
        .sort(),
    ).toEqual(['linux/amd64', 'linux/arm64']);
    expect(build.sbom).toBe(true);
    expect(build.provenance).toBe('mode=max');
    expect(build.push).toBe(true);
    expect(build.file).toBe('Dockerfile');
    expect(build.tags).toBe('${{ steps.meta.outputs.tags }}');
    // Emulation and the builder are set up, and the registry logged in to, before the build.
    for (const before of [
      'docker/setup-qemu-action',
      'docker/setup-buildx-action',
      'docker/login-action',
      'docker/metadata-action',
    ]) {
      expect(action(before)).toBeGreaterThanOrEqual(0);
      expect(action(before)).toBeLessThan(action('docker/build-push-action'));
    }
  });

  test('tags the image ghcr.io/<owner>/website-operator by semver, logged in with GITHUB_TOKEN', () => {
    expect(step('docker/login-action').with).toEqual({
      registry: 'ghcr.io',
      username: '${{ github.actor }}',
      password: '${{ secrets.GITHUB_TOKEN }}',
    });
    const meta = step('docker/metadata-action').with!;
    expect(meta.images).toBe('${{ steps.image.outputs.name }}');
    expect(String(meta.tags).trim().split('\n')).toEqual([
      'type=semver,pattern={{version}}',
      'type=semver,pattern={{major}}.{{minor}}',
    ]);

    // The image step, run: the owner lowercased, as ghcr.io requires.
    const image = steps.find((s) => s.id === 'image')!;
    const output = join(dir, 'output');
    writeFileSync(output, '');
    const result = runStep(image.run!, dir, { OWNER: 'Acme-Corp', GITHUB_OUTPUT: output });
    expect(result.code).toBe(0);
    expect(readFileSync(output, 'utf8')).toBe('name=ghcr.io/acme-corp/website-operator\n');
    expect(image.env).toEqual({ OWNER: '${{ github.repository_owner }}' });
  });

  test('asks for no permission at the top, and only what the job uses', () => {
    expect(workflow.permissions).toEqual({});
    expect(Object.fromEntries(Object.entries(workflow.jobs).map(([name, job]) => [name, job.permissions]))).toEqual({
      version: { contents: 'read' },
      image: { contents: 'read', packages: 'write', 'id-token': 'write', attestations: 'write' },
      packages: { contents: 'read', 'id-token': 'write' },
    });
  });

  test('publishes the image and the packages only after the tag check, and a dry run builds the packages but publishes nothing', () => {
    const { version, image, packages } = workflow.jobs;
    expect(version.if).toBe("github.event_name == 'push'");
    expect(image.needs).toBe('version');
    expect(packages.needs).toBe('version');
    expect(packages.if).toBe(
      "${{ !cancelled() && (needs.version.result == 'success' || github.event_name == 'workflow_dispatch') }}",
    );
    const build = packages.steps.findIndex((s) => s.run === 'npm run package');
    expect(build).toBeGreaterThan(0);
    const publish = packages.steps.filter((s) => s.name?.startsWith('Publish'));
    expect(publish.map((s) => s.name)).toEqual([
      'Publish to npm',
      'Publish to PyPI',
      'Publish to Maven Central',
      'Publish the Go module',
    ]);
    for (const s of publish) {
      expect(s.if).toBe("github.event_name == 'push'");
      expect(packages.steps.indexOf(s)).toBeGreaterThan(build);
    }
    // Each publishes its folder of build/packages (scripts/package.sh), Maven only this package's artifacts.
    expect(publish.map((s) => s.run!.match(/build\/(packages|release)\/\w+/)![0])).toEqual([
      'build/packages/js',
      'build/packages/python',
      'build/release/java',
      'build/packages/go',
    ]);
  });

  test('pins every action to a major version', () => {
    const uses = steps.flatMap((s) => (s.uses ? [s.uses] : []));
    expect(uses.length).toBeGreaterThan(0);
    for (const u of uses) expect(u).toMatch(/^[\w-]+\/[\w-]+@v\d+$/);
  });

  describe('the tag check, run against a package.json, before anything is built or pushed', () => {
    const check = steps.find((s) => s.run?.includes('package.json'));
    const run = (tag: string, version: string) => {
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'website-stack', version }));
      return runStep(check!.run!, dir, { TAG: tag });
    };

    test('comes before the login and the build, and reads the tag from github.ref_name', () => {
      expect(check).toBeDefined();
      expect(check!.env).toEqual({ TAG: '${{ github.ref_name }}' });
      expect(steps.indexOf(check!)).toBeLessThan(action('docker/login-action'));
    });

    test("passes when the tag is v + package.json's version", () => {
      expect(run('v1.2.3', '1.2.3')).toMatchObject({ code: 0, stdout: 'Releasing website-operator 1.2.3\n' });
      expect(run('v2.0.0-rc.1', '2.0.0-rc.1').code).toBe(0);
    });

    test('fails with a message saying what to change when they differ', () => {
      const result = run('v1.2.4', '1.2.3');
      expect(result.code).toBe(1);
      expect(result.stdout).toBe(
        "::error file=package.json::Tag v1.2.4 does not match package.json's version 1.2.3. " +
          'Set "version" to "1.2.4" in package.json (npm version 1.2.4 --no-git-tag-version), commit, and tag that commit; ' +
          'or delete the tag and push v1.2.3. Nothing was pushed.\n',
      );
      expect(run('1.2.3', '1.2.3').code).toBe(1);
    });
  });
});

test("the repository's own package.json has a version a release tag can match", () => {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(`v${version}`).toMatch(/^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
});
