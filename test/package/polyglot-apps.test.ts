// The constructs from Python, Java and Go, as docs/use/constructs.md shows them: `npm run package` in
// a copy of the working tree makes the npm tarball, the Python wheel, the Maven jar and the Go module
// from the jsii assembly; then the page's app runs in each language, built with that language's own
// tools (pip into a virtual environment, Maven, the go command), against cdk8s from PyPI at npm's
// exact versions, and for Java and Go against the cdk8s libraries jsii-pacmak generated where the
// registries lack them (scripts/jsii-packages.sh). Every app must write the TypeScript app's dist/,
// byte for byte; the Python app's objects then pass a server-side dry run on a real cluster.
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { testCluster } from '../../harness/cluster/env.ts';
import { kubectlOk } from '../../harness/cluster/kubectl.ts';
import { stopTestCluster } from '../../harness/cluster/test-cluster.ts';
import { copyWorkingTree } from '../../harness/docs/walkthrough.ts';
import type { Manifest } from '../../harness/manifests.ts';
import { run } from '../../harness/process/run.ts';

const PAGE = 'docs/use/constructs.md';
const rootPackage = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
/** The cdk8s libraries at the versions the package is built against (the npm devDependencies). */
const PEERS = ['cdk8s', 'cdk8s-plus-34', 'constructs'].map((name) => [name, rootPackage.devDependencies[name]]);

/** The page's one code block in `language`. */
function example(language: string): string {
  const page = readFileSync(new URL(`../../${PAGE}`, import.meta.url), 'utf8');
  const blocks = [...page.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]);
  expect(`${blocks.length} ${language} block(s) in ${PAGE}`).toBe(`1 ${language} block(s) in ${PAGE}`);
  return blocks[0];
}

/** dist/ of an app: file name → content. */
function distOf(app: string): Map<string, string> {
  const dir = join(app, 'dist');
  return new Map(
    readdirSync(dir)
      .sort()
      .map((file) => [file, readFileSync(join(dir, file), 'utf8')]),
  );
}

let copy: string;
let work: string;
/** `npm run package`'s lines: NPM_TARBALL=, PYTHON_WHEEL=, JAVA_SETTINGS=, GO_REPLACE=, ... */
let built: [string, string][];
const built1 = (key: string) => built.find(([k]) => k === key)![1];
let typescript: Map<string, string>;

beforeAll(async () => {
  copy = copyWorkingTree('polyglot-');
  work = join(copy, '.local', 'polyglot-apps');
  const lines = await run(copy, 'npm', ['run', '--silent', 'package']);
  built = lines
    .split('\n')
    .filter((line) => /^[A-Z][A-Z0-9_]*=/.test(line))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
  // The TypeScript app: the page's block run by Node against the built package (its ES module build),
  // its peers the checkout's.
  const app = join(work, 'typescript');
  mkdirSync(join(app, 'node_modules'), { recursive: true });
  writeFileSync(join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  symlinkSync(copy, join(app, 'node_modules', 'website-stack'));
  for (const [name] of PEERS) symlinkSync(join(copy, 'node_modules', name), join(app, 'node_modules', name));
  writeFileSync(join(app, 'main.ts'), example('ts'));
  await run(app, process.execPath, ['main.ts']);
  typescript = distOf(app);
}, 900_000);

afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

test('npm run package makes the npm tarball, the Python wheel, the Maven jar and the Go module', () => {
  expect(built.map(([key]) => key)).toEqual(
    expect.arrayContaining([
      'NPM_TARBALL',
      'PYTHON_WHEEL',
      'JAVA_SETTINGS',
      'JAVA_ARTIFACT',
      'GO_MODULE',
      'GO_REPLACE',
    ]),
  );
  expect(built1('NPM_TARBALL')).toMatch(/website-stack-0\.1\.0\.tgz$/);
  expect(built1('PYTHON_WHEEL')).toMatch(/website_stack-0\.1\.0-py3-none-any\.whl$/);
  expect(built1('JAVA_ARTIFACT')).toBe('io.github.website-stack:website-stack:0.1.0');
  expect(built1('GO_MODULE')).toBe('github.com/website-stack/website-stack-go/websitestack');
  // The TypeScript app wrote both charts.
  expect([...typescript.keys()]).toEqual(['platform.k8s.yaml', 'tracing.k8s.yaml']);
});

describe("the page's app in each language writes the TypeScript app's dist/, byte for byte", () => {
  test("Python: the wheel installed with pip beside cdk8s from PyPI at npm's versions", async () => {
    const app = join(work, 'python');
    mkdirSync(app, { recursive: true });
    await run(app, 'python3', ['-m', 'venv', 'venv']);
    await run(app, join(app, 'venv', 'bin', 'pip'), [
      'install',
      '--quiet',
      built1('PYTHON_WHEEL'),
      ...PEERS.map(([name, version]) => `${name}==${version}`),
    ]);
    writeFileSync(join(app, 'main.py'), example('python'));
    await run(app, join(app, 'venv', 'bin', 'python'), ['main.py']);
    expect(distOf(app)).toEqual(typescript);
  }, 600_000);

  test('Java: a Maven project depending on the jar', async () => {
    const app = join(work, 'java');
    mkdirSync(join(app, 'src', 'main', 'java'), { recursive: true });
    const [groupId, artifactId, version] = built1('JAVA_ARTIFACT').split(':');
    writeFileSync(
      join(app, 'pom.xml'),
      `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.acme</groupId>
  <artifactId>platform</artifactId>
  <version>1.0.0</version>
  <properties>
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>${groupId}</groupId>
      <artifactId>${artifactId}</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
</project>
`,
    );
    writeFileSync(join(app, 'src', 'main', 'java', 'Main.java'), example('java'));
    // Maven's downloads (plugins, jsii-runtime, constructs) go to the cache jsii-packages.sh keeps.
    await run(app, 'mvn', [
      '-B',
      '-q',
      '-s',
      built1('JAVA_SETTINGS'),
      `-Dmaven.repo.local=${built1('JAVA_M2')}`,
      'package',
      'dependency:copy-dependencies',
    ]);
    await run(app, 'java', ['-cp', 'target/classes:target/dependency/*', 'Main']);
    expect(distOf(app)).toEqual(typescript);
  }, 600_000);

  test('Go: a module requiring the Go module', async () => {
    const app = join(work, 'go');
    mkdirSync(app, { recursive: true });
    writeFileSync(join(app, 'main.go'), example('go'));
    await run(app, 'go', ['mod', 'init', 'example.com/platform']);
    // The Go module is not published from here, and the proxy refuses cdk8s-team's modules: the
    // generated ones replace them.
    for (const [key, value] of built)
      if (key === 'GO_REPLACE') await run(app, 'go', ['mod', 'edit', `-replace=${value}`]);
    await run(app, 'go', ['mod', 'tidy']);
    await run(app, 'go', ['build', '-o', 'platform', '.']);
    await run(app, join(app, 'platform'), []);
    expect(distOf(app)).toEqual(typescript);
  }, 600_000);
});

test("the Python app's objects pass a server-side dry run on a real cluster", async () => {
  const objects = [...distOf(join(work, 'python')).values()].flatMap((text) =>
    parseAllDocuments(text).map((doc) => doc.toJS() as Manifest),
  );
  const cluster = testCluster('-polyglot');
  await run(copy, 'bash', [join(copy, 'scripts', 'cluster.sh'), 'up'], cluster.env as Record<string, string>);
  try {
    const kubectl = (args: string[], input?: string) => kubectlOk(cluster, args, { input });
    // What a dry run cannot stand in for: the namespaces the other objects go into, and the CRD
    // whose Websites the API server must know. Created for real, then everything dry-run.
    const first = objects.filter((o) => o.kind === 'Namespace' || o.kind === 'CustomResourceDefinition');
    expect(first.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'CustomResourceDefinition/websites.sites.acme.io',
      'Namespace/sites',
      'Namespace/tracing',
    ]);
    const list = (items: Manifest[]) => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
    await kubectl(['apply', '--server-side', '-f', '-'], list(first));
    await kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/websites.sites.acme.io']);
    const out = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], list(objects));
    const applied = out.trim().split('\n');
    expect(applied).toHaveLength(objects.length);
    for (const line of applied) expect(line).toMatch(/ serverside-applied \(server dry run\)$/);
    expect(applied).toContain('website.sites.acme.io/home serverside-applied (server dry run)');
  } finally {
    stopTestCluster(cluster);
  }
}, 600_000);
