// Every command block a reader copies from the README or docs/ is one a checker parses: shell
// blocks are valid bash whose `npm run` scripts and repository paths exist; YAML and JSON blocks
// parse; TypeScript blocks have no syntax error. (Relative links and anchors are checked by
// remark-validate-links in `npm run lint:docs`; the Argo CD, constructs and capacity blocks are
// also run or compared by their own tests.)
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { type Block, blocks, SHELL_LANGS } from '../../harness/docs/markdown.ts';
import { walkthroughPages, walkthroughSteps } from '../../harness/docs/walkthrough.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SCRIPTS = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts);

/** The README and every page under docs/. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => join('docs', file)),
];

// docs/reference/ is jsii-docgen's API reference: its blocks are signatures (`new X(scope: Construct, ...)`),
// not code to run.
const ALL = PAGES.filter((page) => !page.startsWith('docs/reference/')).flatMap((page) => blocks(ROOT, page));
const of = (...langs: string[]) => ALL.filter((b) => langs.includes(b.lang)).map((b) => [`${b.page}:${b.line}`, b]);

test('the README and docs/ hold command blocks, each fence with its language', () => {
  expect(ALL.length).toBeGreaterThan(20);
  expect(ALL.filter((b) => b.lang === '').map((b) => `${b.page}:${b.line}`)).toEqual([]);
});

describe.each(of(...SHELL_LANGS))('shell block %s', (_, block) => {
  const { text } = block as Block;
  test('is valid bash', () => {
    execFileSync('bash', ['-n'], { input: text });
  });
  test('runs only npm scripts package.json has', () => {
    const named = [...text.matchAll(/\bnpm run ([\w:.-]+)/g)].map((m) => m[1]);
    expect(named.filter((script) => !SCRIPTS.includes(script))).toEqual([]);
  });
  test("names only the repository's own files that exist", () => {
    const paths = [
      ...text.matchAll(/(?<![\w./-])((?:scripts|harness|bench|test|lib|operator|dist|docs)\/[\w./-]*[\w/])/g),
    ].map((m) => m[1]);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });
});

describe.each(of('yaml', 'yml'))('YAML block %s', (_, block) => {
  test('parses', () => {
    const errors = parseAllDocuments((block as Block).text).flatMap((doc) =>
      'errors' in doc ? doc.errors.map((e) => e.message) : [],
    );
    expect(errors).toEqual([]);
  });
});

describe.each(of('json'))('JSON block %s', (_, block) => {
  test('parses', () => {
    expect(() => JSON.parse((block as Block).text)).not.toThrow();
  });
});

describe.each(of('ts', 'typescript'))('TypeScript block %s', (_, block) => {
  test('has no syntax error', () => {
    const file = ts.createSourceFile('block.ts', (block as Block).text, ts.ScriptTarget.Latest, true);
    const diagnostics = (file as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics;
    expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
  });
});

test('every page is reachable from the README through docs/README.md', () => {
  const index = readFileSync(join(ROOT, 'docs/README.md'), 'utf8');
  expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toContain('docs/README.md');
  const unlisted = PAGES.filter((page) => page.startsWith('docs/') && page !== 'docs/README.md').filter(
    (page) => !index.includes(`(${relative('docs', page)}`) && !index.includes(`(./${relative('docs', page)}`),
  );
  expect(unlisted).toEqual([]);
});

describe('walkthroughs: the pages a reader follows step by step are run as written', () => {
  const marked = walkthroughPages(PAGES);
  const tests = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join('test', file));
  const opened = tests.flatMap((file) =>
    [
      ...readFileSync(join(ROOT, file), 'utf8').matchAll(/(?:Walkthrough\.open|walkthrough)\(\s*'([^']+\.md)'\s*[,)]/g),
    ].map((m) => ({
      page: m[1],
      test: file,
    })),
  );

  test('the README tour is one', () => {
    expect(marked.map((m) => m.page)).toContain('README.md');
  });

  test('each marked page names the test that opens it, and each page a test opens is marked', () => {
    expect(opened.sort((a, b) => a.page.localeCompare(b.page))).toEqual(
      marked.sort((a, b) => a.page.localeCompare(b.page)),
    );
  });

  test.each(marked.map((m) => [m.page]))(
    '%s: every step runs to an end or is marked to run in the background',
    (page) => {
      // A watch (`-w`, `--watch`, `-f` of logs) never ends: the runner would wait for it forever.
      const endless = walkthroughSteps(page).filter(
        (step) => !step.background && /\s(-w|--watch|logs\s.*-f)(\s|$)/m.test(step.text),
      );
      expect(endless.map((step) => `${page}:${step.line}`)).toEqual([]);
    },
  );
});
