// The direction of the imports between folders (docs/contribute/layout.md): tests, the benchmark and
// the scripts use the harness, which uses the library and the operator; the framework never reaches
// into the domain, the published library into anything else, nor a test project into another.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every TypeScript source below `dir`, relative to the repository root. */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(dir, file));
}

/** The repository files `file` imports (static, dynamic and type-only), as found by the TypeScript parser. */
function imports(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => relative(ROOT, join(ROOT, dirname(file), name)));
}

/** `from` files importing anything under one of `forbidden`, as "importer -> imported". */
function violations(from: string[], forbidden: string[]): string[] {
  return from.flatMap((file) =>
    imports(file)
      .filter((target) => forbidden.some((folder) => target.startsWith(folder)))
      .map((target) => `${file} -> ${target}`),
  );
}

/** Every jest project (jest.config.js), each the name of its folder under test/. */
const PROJECTS = [...readFileSync(join(ROOT, 'jest.config.js'), 'utf8').matchAll(/displayName: '([a-z]+)'/g)].map(
  (m) => m[1],
);

describe('which way the imports run', () => {
  test.each([
    [
      'the framework (operator/src/controller) knows no Website, webhook or entrypoint',
      'operator/src/controller',
      ['operator/src/reconciler', 'operator/src/webhook', 'operator/src/bin'],
    ],
    [
      'observability is a leaf of the operator',
      'operator/src/observability',
      ['operator/src/controller', 'operator/src/reconciler', 'operator/src/webhook', 'operator/src/bin'],
    ],
    [
      'the Website domain does not reach the webhook or the entrypoint',
      'operator/src/reconciler',
      ['operator/src/webhook', 'operator/src/bin'],
    ],
    ['the published library stands alone', 'lib', ['operator', 'test', 'bench', 'scripts']],
    ['the operator does not import tests, measurement or scripts', 'operator/src', ['test', 'bench', 'scripts']],
    [
      'the harness serves tests, measurement and scripts, and depends on none of them',
      'harness',
      ['test', 'bench', 'scripts'],
    ],
    ['tests do not import measurement or scripts', 'test', ['bench', 'scripts']],
    ['the benchmark does not import tests or scripts', 'bench', ['test', 'scripts']],
    ['scripts do not import tests or measurement', 'scripts', ['test', 'bench']],
    ...PROJECTS.map((project): [string, string, string[]] => [
      `the ${project} test project imports no other test project: what they share is the harness`,
      `test/${project}`,
      PROJECTS.filter((other) => other !== project).map((other) => `test/${other}`),
    ]),
  ])('%s', (_, folder, forbidden) => {
    const files = sources(folder);
    expect(files.length).toBeGreaterThan(0);
    expect(violations(files, forbidden)).toEqual([]);
  });

  test('no operator source imports the fake API, which is for tests', () => {
    const production = sources('operator/src').filter((file) => !file.startsWith('operator/src/fake/'));
    expect(violations(production, ['operator/src/fake'])).toEqual([]);
  });

  test('no two files import each other (a dynamic import(), which loads a module lazily, aside)', () => {
    const files = ['lib', 'operator/src', 'harness', 'test', 'bench', 'scripts'].flatMap(sources);
    const known = new Set(files);
    const dynamic = (file: string) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(/\bimport\(\s*'(\.[^']+)'\s*\)/g)].map((m) =>
        relative(ROOT, join(ROOT, dirname(file), m[1])),
      );
    const importsOf = new Map(
      files.map((file) => {
        const lazy = new Set(dynamic(file));
        return [file, imports(file).filter((target) => !lazy.has(target))];
      }),
    );
    const mutual = files.flatMap((file) =>
      importsOf
        .get(file)!
        .filter((target) => known.has(target) && file < target && importsOf.get(target)!.includes(file))
        .map((target) => `${file} <-> ${target}`),
    );
    expect(mutual).toEqual([]);
  });

  test('the operator imports the library in one place', () => {
    const importers = sources('operator/src').filter((file) =>
      imports(file).some((target) => target.startsWith('lib/')),
    );
    expect(importers).toEqual(['operator/src/library.ts']);
  });
});

test('every jest project has a folder of its own under test/, and a lane in scripts/test.sh', () => {
  expect(PROJECTS.length).toBeGreaterThan(5);
  const lanes = readFileSync(join(ROOT, 'scripts/test.sh'), 'utf8');
  for (const project of PROJECTS) {
    expect(sources(`test/${project}`).length).toBeGreaterThan(0);
    // `lane <steps...>`, a step a project or projects joined by +: a project no lane names would
    // never run in `npm test`.
    expect(lanes).toMatch(new RegExp(`^\\s*lane ([\\w+]+ )*(\\w+\\+)*${project}\\b`, 'm'));
    // ... and the summary would not count it.
    expect(lanes).toMatch(new RegExp(`^node scripts/test-summary\\.ts "\\$results"( \\w+)* ${project}\\b`, 'm'));
  }
});
