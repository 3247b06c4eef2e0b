import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../harness/process/poll.ts';

const script = fileURLToPath(new URL('../../scripts/binaries.sh', import.meta.url));
const manifest = fileURLToPath(new URL('../../scripts/otelcol-builder.yaml', import.meta.url));
const jaegerSources = ['components.go', 'without-typed-client.awk'].map((file) =>
  fileURLToPath(new URL(`../../scripts/jaeger/${file}`, import.meta.url)),
);
// No Go on this PATH: a test that reaches a build fails fast with "Go is not installed" instead of compiling.
const noGo = '/usr/bin:/bin';

function pinned(name: string): string {
  const match = readFileSync(script, 'utf8').match(new RegExp(`^${name}=(\\S+)$`, 'm'));
  if (!match) throw new Error(`${name} is not set in scripts/binaries.sh`);
  return match[1];
}

const manifestHash = (...paths: string[]) =>
  createHash('sha256')
    .update(Buffer.concat(paths.map((path) => readFileSync(path))))
    .digest('hex')
    .slice(0, 12);

// An empty cache, so nothing is found there and the script must use the environment or build.
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'binaries-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string>) {
  const result = spawnSync('bash', [script, ...args], {
    env: { PATH: process.env.PATH!, HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache'), ...env },
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function fakeBinary(name: string, folder = dir): string {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
}

// A binary already in the cache, where a build would have put it.
const cached = (file: string) => fakeBinary(file, join(dir, 'cache', 'bin'));

describe('scripts/binaries.sh', () => {
  test("reuses envtest's TEST_ASSET_* binaries instead of building", () => {
    const apiserver = fakeBinary('my-apiserver');
    const etcd = fakeBinary('my-etcd');
    const result = run(['kube-apiserver', 'etcd'], { TEST_ASSET_KUBE_APISERVER: apiserver, TEST_ASSET_ETCD: etcd });
    expect(result.stdout).toBe(`kube-apiserver=${apiserver}\netcd=${etcd}\n`);
    expect(result.code).toBe(0);
  });

  test('reuses binaries from KUBEBUILDER_ASSETS', () => {
    fakeBinary('kubectl');
    const result = run(['kubectl'], { KUBEBUILDER_ASSETS: dir });
    expect(result.stdout).toBe(`kubectl=${join(dir, 'kubectl')}\n`);
  });

  test('says what to do when a preset binary is not executable', () => {
    const result = run(['etcd'], { TEST_ASSET_ETCD: join(dir, 'missing') });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`etcd from the environment is not an executable file: ${join(dir, 'missing')}`);
  });

  test('says how to get Go when it is missing and a build is needed', () => {
    const result = run(['kwok'], { PATH: '/usr/bin:/bin' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /Go is not installed\. Install Go >= 1\.25 .* or point KUBEBUILDER_ASSETS \/ TEST_ASSET_\* at existing binaries/,
    );
  });

  test('rejects an unknown binary name', () => {
    const result = run(['kubelet-v2'], {});
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown binary 'kubelet-v2'");
  });

  test('builds the cluster set when no name is given, and nothing of the trace stack', () => {
    const cluster = [
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
      'kubectl',
      'etcd',
      'kwok',
      'kwokctl',
    ];
    for (const name of cluster) fakeBinary(name);
    const result = run([], { KUBEBUILDER_ASSETS: dir, PATH: noGo });
    expect(result.stdout).toBe(cluster.map((name) => `${name}=${join(dir, name)}\n`).join(''));
    expect(result.code).toBe(0);
  });

  test('"tracing" names jaeger, hotrod and otelcol, each reused from TEST_ASSET_*', () => {
    const jaeger = fakeBinary('my-jaeger');
    const hotrod = fakeBinary('my-hotrod');
    const otelcol = fakeBinary('my-otelcol');
    const result = run(['tracing'], {
      TEST_ASSET_JAEGER: jaeger,
      TEST_ASSET_HOTROD: hotrod,
      TEST_ASSET_OTELCOL: otelcol,
      PATH: noGo,
    });
    expect(result.stdout).toBe(`jaeger=${jaeger}\nhotrod=${hotrod}\notelcol=${otelcol}\n`);
    expect(result.code).toBe(0);
  });

  test('does not take trace binaries from KUBEBUILDER_ASSETS, which holds Kubernetes binaries', () => {
    fakeBinary('jaeger');
    const result = run(['jaeger'], { KUBEBUILDER_ASSETS: dir, PATH: noGo });
    expect(result.stdout).toBe('');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Go is not installed');
  });

  test("reuses oauth2-proxy from TEST_ASSET_OAUTH2_PROXY; it is in no group, not even 'tracing'", () => {
    const proxy = fakeBinary('my-oauth2-proxy');
    const result = run(['oauth2-proxy'], { TEST_ASSET_OAUTH2_PROXY: proxy, PATH: noGo });
    expect(result.stdout).toBe(`oauth2-proxy=${proxy}\n`);
    expect(result.code).toBe(0);
    // The development stack (`npm run tracing:up`) builds 'tracing' and has no OIDC in front of Jaeger.
    const tracing = run(['tracing'], {
      TEST_ASSET_JAEGER: fakeBinary('my-jaeger'),
      TEST_ASSET_HOTROD: fakeBinary('my-hotrod'),
      TEST_ASSET_OTELCOL: fakeBinary('my-otelcol'),
      TEST_ASSET_OAUTH2_PROXY: proxy,
      PATH: noGo,
    });
    expect(tracing.stdout).not.toContain('oauth2-proxy');
    expect(tracing.code).toBe(0);
  });

  test('says what to do when a trace binary from the environment is not executable', () => {
    const result = run(['otelcol'], { TEST_ASSET_OTELCOL: join(dir, 'missing') });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`otelcol from the environment is not an executable file: ${join(dir, 'missing')}`);
  });

  test('"node" names what a real node runs, each at its own pinned release (cached: no Go needed)', () => {
    // CoreDNS is cached under a key of its own (built with the node's Corefile plugins only).
    const node: Array<[string, string, string?]> = [
      ['kubelet', 'KUBERNETES_VERSION'],
      ['kube-proxy', 'KUBERNETES_VERSION'],
      ['containerd', 'CONTAINERD_VERSION'],
      ['containerd-shim-runc-v2', 'CONTAINERD_VERSION'],
      ['ctr', 'CONTAINERD_VERSION'],
      ['cni-bridge', 'CNI_PLUGINS_VERSION'],
      ['cni-host-local', 'CNI_PLUGINS_VERSION'],
      ['cni-loopback', 'CNI_PLUGINS_VERSION'],
      ['cni-portmap', 'CNI_PLUGINS_VERSION'],
      ['kube-router', 'KUBE_ROUTER_VERSION', `-firewall-k8s-${pinned('KUBERNETES_VERSION')}`],
      ['coredns', 'COREDNS_VERSION', '-kubeadm-plugins'],
    ];
    const paths = node.map(([name, versionVariable, suffix = '']) =>
      cached(`${name}-${pinned(versionVariable)}${suffix}`),
    );
    const result = run(['node'], { PATH: noGo });
    expect(result.stdout).toBe(node.map(([name], i) => `${name}=${paths[i]}\n`).join(''));
    expect(result.code).toBe(0);
  });

  test('prints cached jaeger and hotrod without building them (no Go needed)', () => {
    const version = pinned('JAEGER_VERSION');
    // Keyed by its components and its Elasticsearch client's patch too: a changed file is a different binary.
    const jaeger = cached(`jaeger-${version}-${manifestHash(...jaegerSources)}`);
    const hotrod = cached(`hotrod-${version}`);
    const result = run(['jaeger', 'hotrod'], { PATH: noGo });
    expect(result.stdout).toBe(`jaeger=${jaeger}\nhotrod=${hotrod}\n`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  test.each([
    ['actionlint', 'ACTIONLINT_VERSION'],
    ['kro', 'KRO_VERSION'],
    ['oauth2-proxy', 'OAUTH2_PROXY_VERSION'],
  ])('prints a cached %s without building it (no Go needed)', (name, versionVariable) => {
    const binary = cached(`${name}-${pinned(versionVariable)}`);
    const result = run([name], { PATH: noGo });
    expect(result.stdout).toBe(`${name}=${binary}\n`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  test.each([
    ['actionlint', 'KUBEBUILDER_ASSETS holds Kubernetes binaries only'],
    ['kro', 'it is in no group, and no preset variable names it'],
    ['oauth2-proxy', 'KUBEBUILDER_ASSETS holds Kubernetes binaries only'],
  ])('needs Go to build %s when it is not cached (%s)', (name) => {
    fakeBinary(name);
    const result = run([name], { KUBEBUILDER_ASSETS: dir, PATH: noGo });
    expect(result.stdout).toBe('');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('Go is not installed');
  });

  // `npm test` builds in the background while its test lanes ask for binaries too.
  describe('with concurrent callers', () => {
    const log = () => join(dir, 'builds.log');
    const release = () => join(dir, 'release');
    const path = (name: string) => join(dir, 'cache', 'bin', `${name}-${pinned('CONTAINERD_VERSION')}`);
    // A `go` that "installs" the package named last into $GOBIN, logging when each build starts
    // and ends; a build ends only once the test has created the file release().
    beforeEach(() => {
      mkdirSync(join(dir, 'fake-go'));
      writeFileSync(
        join(dir, 'fake-go', 'go'),
        [
          '#!/bin/bash',
          'pkg=${@: -1}; name=${pkg%@*}; name=${name##*/}',
          `echo "start $name" >>${log()}`,
          `until [[ -e ${release()} ]]; do sleep 0.05; done`,
          'printf "#!/bin/sh\\n" >"$GOBIN/$name" && chmod +x "$GOBIN/$name"',
          `echo "end $name" >>${log()}`,
        ].join('\n'),
      );
      chmodSync(join(dir, 'fake-go', 'go'), 0o755);
    });
    const builds = () => (existsSync(log()) ? readFileSync(log(), 'utf8').trim().split('\n') : []);
    const caller = (names: string[]) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = spawn('bash', [script, ...names], {
          env: { PATH: `${join(dir, 'fake-go')}:${noGo}`, HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache') },
        });
        let stdout = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.on('close', (code) => resolve({ code, stdout }));
      });

    test('build each binary once, never two at a time', async () => {
      writeFileSync(release(), '');
      const [first, second] = await Promise.all([caller(['containerd', 'ctr']), caller(['ctr', 'containerd'])]);
      expect(first).toEqual({ code: 0, stdout: `containerd=${path('containerd')}\nctr=${path('ctr')}\n` });
      expect(second).toEqual({ code: 0, stdout: `ctr=${path('ctr')}\ncontainerd=${path('containerd')}\n` });
      const log = builds();
      expect([...log].sort()).toEqual(['end containerd', 'end ctr', 'start containerd', 'start ctr']);
      expect([log[0].replace('start', 'end'), log[2].replace('start', 'end')]).toEqual([log[1], log[3]]);
    });

    // npm test's two build streams: binaries of different modules build side by side.
    test('binaries of different modules build at the same time', async () => {
      const actionlint = join(dir, 'cache', 'bin', `actionlint-${pinned('ACTIONLINT_VERSION')}`);
      const building = caller(['ctr']);
      await eventually('the build of ctr to start', () => builds().includes('start ctr'), { intervalMs: 20 });
      const beside = caller(['actionlint']);
      await eventually(
        'the build of actionlint to start while ctr builds',
        () => builds().includes('start actionlint'),
        {
          intervalMs: 20,
        },
      );
      expect(builds()).toEqual(['start ctr', 'start actionlint']);
      writeFileSync(release(), '');
      expect(await building).toEqual({ code: 0, stdout: `ctr=${path('ctr')}\n` });
      expect(await beside).toEqual({ code: 0, stdout: `actionlint=${actionlint}\n` });
    });

    // npm test downloads every build's modules beside its build stream.
    test('download fetches a module once under its build lock, compiling nothing: its build waits for it', async () => {
      const downloading = caller(['download', 'ctr', 'containerd']);
      await eventually('the download of containerd to start', () => builds().includes('start containerd'), {
        intervalMs: 20,
      });
      const building = caller(['ctr']);
      writeFileSync(release(), '');
      expect(await downloading).toEqual({ code: 0, stdout: '' });
      expect(await building).toEqual({ code: 0, stdout: `ctr=${path('ctr')}\n` });
      // One `go install -n` for both binaries of the module, then the build, after it.
      expect(builds()).toEqual(['start containerd', 'end containerd', 'start ctr', 'end ctr']);
      expect(readdirSync(join(dir, 'cache', 'bin')).filter((file) => !file.startsWith('.'))).toEqual([
        `ctr-${pinned('CONTAINERD_VERSION')}`,
      ]);
    });

    test('a caller whose binaries are cached is not held up by a build of another binary', async () => {
      const kubectl = cached(`kubectl-${pinned('KUBERNETES_VERSION')}`);
      const building = caller(['ctr']);
      await eventually('the build of ctr to start', () => builds().includes('start ctr'), { intervalMs: 20 });
      expect(await caller(['kubectl'])).toEqual({ code: 0, stdout: `kubectl=${kubectl}\n` });
      expect(builds()).toEqual(['start ctr']);
      writeFileSync(release(), '');
      expect(await building).toEqual({ code: 0, stdout: `ctr=${path('ctr')}\n` });
    });
  });

  test('download skips what is cached, and then needs no Go', () => {
    cached(`kwok-${pinned('KWOK_VERSION')}-k8s-${pinned('KUBERNETES_VERSION')}`);
    expect(run(['download', 'kwok'], { PATH: noGo })).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  test('keys the cached otelcol by the Collector version and a hash of the builder manifest', () => {
    const otelcol = cached(`otelcol-${pinned('OTELCOL_VERSION')}-${manifestHash(manifest)}`);
    const result = run(['otelcol'], { PATH: noGo });
    expect(result.stdout).toBe(`otelcol=${otelcol}\n`);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  test('rebuilds otelcol when the builder manifest changes', () => {
    const before = cached(`otelcol-${pinned('OTELCOL_VERSION')}-${manifestHash(manifest)}`);
    // A copy of the script beside an edited manifest, sharing the cache: a different component list.
    const scripts = join(dir, 'scripts');
    mkdirSync(scripts);
    copyFileSync(script, join(scripts, 'binaries.sh'));
    const edited = join(scripts, 'otelcol-builder.yaml');
    writeFileSync(edited, readFileSync(manifest, 'utf8').replace(/^.*debugexporter.*\n/m, ''));
    expect(manifestHash(edited)).not.toBe(manifestHash(manifest));
    const runEdited = () => {
      const result = spawnSync('bash', [join(scripts, 'binaries.sh'), 'otelcol'], {
        env: { PATH: noGo, HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache') },
        encoding: 'utf8',
      });
      return { code: result.status, stdout: result.stdout, stderr: result.stderr };
    };

    // Only the old manifest's binary is cached: it is not reused, a build is needed.
    const missing = runEdited();
    expect(missing.stdout).toBe('');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('Go is not installed');

    const after = cached(`otelcol-${pinned('OTELCOL_VERSION')}-${manifestHash(edited)}`);
    const hit = runEdited();
    expect(hit.stdout).toBe(`otelcol=${after}\n`);
    expect(after).not.toBe(before);
  });

  test("builds otelcol from the trace stack's components, less the routing connector the proxy cannot supply", () => {
    const modules = [...readFileSync(manifest, 'utf8').matchAll(/^\s*- gomod: (\S+) (\S+)$/gm)].map((m) =>
      m[1].split('/').pop(),
    );
    expect(modules.sort()).toEqual(
      [
        'otlpreceiver',
        'batchprocessor',
        'memorylimiterprocessor',
        'filterprocessor',
        'probabilisticsamplerprocessor',
        'tailsamplingprocessor',
        'attributesprocessor',
        'otlpexporter',
        'otlphttpexporter',
        'debugexporter',
        'healthcheckextension',
        'bearertokenauthextension',
        'basicauthextension',
        'oauth2clientauthextension',
        'oidcauthextension',
        'envprovider',
        'fileprovider',
        'httpprovider',
        'httpsprovider',
        'yamlprovider',
      ].sort(),
    );
  });
});
