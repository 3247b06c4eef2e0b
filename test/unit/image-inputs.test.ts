// scripts/image.sh reuses the operator image's layout when what it is built from is unchanged
// (`scripts/image.sh inputs`): the key must change with every input and with nothing else.
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// The script, the Dockerfile, what its COPY lines take, what the script reads (package.json), and a file the image does not hold.
const COPIED = [
  'scripts/image.sh',
  'Dockerfile',
  'package.json',
  'package-lock.json',
  'operator/package.json',
  'tsconfig.json',
  'imports',
  'lib',
  'operator/src',
  'operator/bundle.ts',
  'operator/undici.cjs',
  'scripts/image-tree.sh',
  'README.md',
];

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'image-inputs-'));
  for (const path of COPIED) cpSync(join(ROOT, path), join(dir, path), { recursive: true });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function inputs(): string {
  const result = spawnSync('bash', [join(dir, 'scripts/image.sh'), 'inputs'], {
    env: { PATH: process.env.PATH, HOME: dir, WEBSITE_STACK_CACHE: join(dir, 'cache') },
    encoding: 'utf8',
  });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return result.stdout.trim();
}

describe('scripts/image.sh inputs', () => {
  test('is a SHA-256, the same for the same tree', () => {
    const key = inputs();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(inputs()).toBe(key);
  });

  test.each([
    ['an operator source', 'operator/src/bin/operator.ts', '// changed\n'],
    ['a library construct', 'lib/workload/website-workload.ts', '// changed\n'],
    ["the bundle's undici entry", 'operator/undici.cjs', '// changed\n'],
    ['the lockfile', 'package-lock.json', '\n'],
    ['the Dockerfile', 'Dockerfile', '# changed\n'],
    ['the script itself', 'scripts/image.sh', '# changed\n'],
  ])('changes with %s', (_, file, text) => {
    const before = inputs();
    appendFileSync(join(dir, file), text);
    expect(inputs()).not.toBe(before);
  });

  test('does not change with a file the image does not take', () => {
    const before = inputs();
    appendFileSync(join(dir, 'README.md'), 'changed\n');
    expect(inputs()).toBe(before);
  });
});
