// scripts/node-images.sh builds the images a real node needs to run every pod in dist/: its list
// must name each image exactly as dist/ and the code do, or the kubelet would pull instead.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_WEB_IMAGE } from '../../lib/workload/website-workload.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const script = join(ROOT, 'scripts/node-images.sh');

// An empty cache, and no Go on the PATH: listing must need neither.
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'node-images-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function run(args: string[]) {
  const result = spawnSync('bash', [script, ...args], {
    env: { PATH: '/usr/bin:/bin', HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache') },
    encoding: 'utf8',
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Every `image:` of the manifests in dist/. */
function distImages(): Set<string> {
  const images = new Set<string>();
  for (const file of readdirSync(join(ROOT, 'dist'), { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.yaml')) continue;
    for (const m of readFileSync(join(ROOT, 'dist', file), 'utf8').matchAll(/^\s*(?:- )?image: "?([^"\s]+)"?$/gm)) {
      images.add(m[1]);
    }
  }
  return images;
}

describe('scripts/node-images.sh', () => {
  test("lists every image of dist/, the Websites' web server and the node's own pause and CoreDNS, nothing else", () => {
    const result = run(['list']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const listed = result.stdout.trim().split('\n');
    expect(new Set(listed).size).toBe(listed.length);
    const node = listed.filter((ref) => ref.startsWith('registry.k8s.io/'));
    expect(node.map((ref) => ref.replace(/:.*/, '')).sort()).toEqual([
      'registry.k8s.io/coredns/coredns',
      'registry.k8s.io/pause',
    ]);
    // The operator renders the Websites' Deployments at run time: their image is in no manifest.
    expect(listed.filter((ref) => !node.includes(ref)).sort()).toEqual([...distImages(), DEFAULT_WEB_IMAGE].sort());
  });

  test('builds nothing when listing', () => {
    run(['list']);
    expect(existsSync(join(dir, 'cache'))).toBe(false);
  });

  test('rejects an unknown image name before building anything', () => {
    const result = run(['build', 'nginx', 'no-such-image']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("no image named 'no-such-image'");
    expect(existsSync(join(dir, 'cache'))).toBe(false);
  });
});
