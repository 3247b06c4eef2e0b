import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../scripts/binaries.sh', import.meta.url));

// An empty cache, so nothing is found there and the script must use the environment or build.
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'binaries-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[], env: Record<string, string>) {
  const result = spawnSync('bash', [script, ...args], { env: { PATH: process.env.PATH!, HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache'), ...env }, encoding: 'utf8' });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function fakeBinary(name: string): string {
  const path = join(dir, name);
  writeFileSync(path, '#!/bin/sh\n');
  chmodSync(path, 0o755);
  return path;
}

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
    expect(result.stderr).toMatch(/Go is not installed\. Install Go >= 1\.25 .* or point KUBEBUILDER_ASSETS \/ TEST_ASSET_\* at existing binaries/);
  });

  test('rejects an unknown binary name', () => {
    const result = run(['kubelet'], {});
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("unknown binary 'kubelet'");
  });
});
