// The direction of the imports between folders (README "Layout"): the framework never reaches into the
// domain, the published library into the operator or the tests, and nothing outside bench/ into bench/.
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
      'test support serves tests and measurement, and depends on neither',
      'test/support',
      ['test/unit', 'test/cluster', 'test/isolated', 'test/trace', 'test/package', 'bench'],
    ],
    ['tests do not import measurement', 'test', ['bench']],
    ['scripts do not import measurement', 'scripts', ['bench']],
  ])('%s', (_, folder, forbidden) => {
    const files = sources(folder);
    expect(files.length).toBeGreaterThan(0);
    expect(violations(files, forbidden)).toEqual([]);
  });

  test('no two files import each other (a dynamic import(), which loads a module lazily, aside)', () => {
    const files = ['lib', 'operator/src', 'test', 'bench', 'scripts'].flatMap(sources);
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
