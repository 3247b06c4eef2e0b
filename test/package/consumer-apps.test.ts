// The package as its users get it: `npm pack`'s tarball installed into fresh cdk8s apps of the
// kinds people write, each of which type-checks and synthesizes with its own group and namespace:
// - the app cdk8s-cli's `typescript-app` template generates (CommonJS, ts-node), run through the
//   template's own hook minus its online `cdk8s import` step;
// - an ES module app running the examples of the README and docs/ exactly as written;
// - apps on the oldest and the newest cdk8s, constructs and cdk8s-plus-34 the peer ranges allow.
// None of them may get the operator's runtime (@kubernetes/client-node and the rest).
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { type Manifest, only } from '../../harness/manifests.ts';
import { run } from '../../harness/process/run.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const require = createRequire(import.meta.url);
const rootPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const semver = require('semver') as { satisfies(version: string, range: string): boolean };

/** The peer versions the package claims, oldest and newest (package.json's peerDependencies). */
const PEERS = {
  oldest: { cdk8s: '2.68.12', constructs: '10.3.0', 'cdk8s-plus-34': '2.0.20' },
  newest: { cdk8s: '2.70.106', constructs: '10.8.1', 'cdk8s-plus-34': '2.0.54' },
} as const;

const npm = (cwd: string, ...args: string[]) =>
  run(cwd, 'npm', [...args, '--no-audit', '--no-fund', '--loglevel=error']);
const tsc = (cwd: string, ...args: string[]) => run(cwd, process.execPath, [TSC, ...args]);
const node = (cwd: string, file: string) => run(cwd, process.execPath, [file]);

/** Every object in the YAML files directly inside `dir`. */
function manifests(dir: string): Manifest[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .flatMap((file) => parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => doc.toJS() as Manifest))
    .filter(Boolean);
}

/** What every app must show of its installed tree: the library and its peers, no operator runtime. */
function expectNoOperatorRuntime(app: string): void {
  expect(existsSync(join(app, 'node_modules/website-stack/package.json'))).toBe(true);
  for (const runtime of [
    '@kubernetes/client-node',
    'undici',
    'pino',
    'prom-client',
    '@opentelemetry/sdk-trace',
    '@peculiar/x509',
  ]) {
    expect({ runtime, installed: existsSync(join(app, 'node_modules', runtime)) }).toEqual({
      runtime,
      installed: false,
    });
  }
  const installed = JSON.parse(readFileSync(join(app, 'node_modules/website-stack/package.json'), 'utf8'));
  expect(installed.dependencies ?? {}).toEqual({});
}

/** The installed version of `name` in `app`. */
const versionIn = (app: string, name: string) =>
  JSON.parse(readFileSync(join(app, 'node_modules', name, 'package.json'), 'utf8')).version;

/** A platform team's chart: the Website API in its own group and namespace, one Website, and the shell operator's script. */
const PLATFORM_CHART = `
    const operator = new WebsiteOperator(this, 'operator', {
      group: 'sites.acme.io',
      namespace: 'sites',
      image: 'registry.acme.io/platform/website-operator:0.1.0',
    });
    new WebsiteCrd(this, 'crd', { operator });
    new Website(this, 'home', {
      group: 'sites.acme.io',
      metadata: { name: 'home', namespace: 'sites' },
      spec: { title: 'Home', replicas: 3 },
    });
`;

/** What PLATFORM_CHART must synthesize, wherever it runs. */
function expectPlatform(objects: Manifest[]): void {
  const crd = only(objects, 'CustomResourceDefinition');
  expect(crd.metadata.name).toBe('websites.sites.acme.io');
  expect(crd.spec.conversion.webhook.clientConfig.service).toEqual({
    name: 'website-operator-webhook',
    namespace: 'sites',
    port: 443,
    path: '/convert',
  });
  const webhookService = only(objects, 'Service', 'website-operator-webhook');
  expect(webhookService.metadata.namespace).toBe('sites');
  const deployment = only(objects, 'Deployment', 'website-operator');
  expect(deployment.metadata.namespace).toBe('sites');
  expect(deployment.spec.template.spec.containers[0].image).toBe('registry.acme.io/platform/website-operator:0.1.0');
  const env = Object.fromEntries(
    deployment.spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
  );
  expect(env.WEBSITE_GROUP).toBe('sites.acme.io');
  const website = only(objects, 'Website', 'home');
  expect(website.apiVersion).toBe('sites.acme.io/v1');
  expect(website.spec).toEqual({ title: 'Home', replicas: 3 });
}

let work: string;
let tarball: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'consumer-apps-'));
  // `npm pack` runs the prepack build: exactly what `npm publish` would upload.
  const out = await npm(ROOT, 'pack', '--json', '--pack-destination', work);
  const [{ filename }] = JSON.parse(out.slice(out.indexOf('[')));
  tarball = join(work, filename);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

test('the tarball holds the two builds and dist/, and no operator runtime or sources', async () => {
  const files = (await run(work, 'tar', ['-tzf', tarball])).split('\n').filter(Boolean);
  expect(files).toEqual(
    expect.arrayContaining([
      'package/build/esm/lib/index.js',
      'package/build/cjs/lib/index.js',
      'package/build/cjs/lib/index.d.ts',
      'package/build/cjs/package.json',
    ]),
  );
  expect(
    files.filter(
      (f) =>
        /^package\/(operator|lib|test|scripts|bench)\//.test(f) ||
        f.includes('/bin/operator') ||
        f.includes('kube-client'),
    ),
  ).toEqual([]);
  expect(files.some((f) => f.startsWith('package/dist/website-operator/'))).toBe(true);
});

test('its types resolve under node10, node16 (CommonJS and ESM) and bundler resolution (arethetypeswrong)', async () => {
  const attw = join(ROOT, 'node_modules/@arethetypeswrong/cli/dist/index.js');
  const out = await run(ROOT, process.execPath, [attw, tarball, '--format', 'json']);
  const { analysis, problems } = JSON.parse(out);
  expect(Object.keys(analysis.entrypoints['.'].resolutions).sort()).toEqual([
    'bundler',
    'node10',
    'node16-cjs',
    'node16-esm',
  ]);
  expect(problems).toEqual({});
});

test("cdk8s-cli's typescript-app template (CommonJS, ts-node) type-checks and synthesizes", async () => {
  const app = join(work, 'template-app');
  mkdirSync(app);
  // The template exactly as `cdk8s init typescript-app` uses it, from the cdk8s-cli package, with
  // the values init computes; its post-install hook minus the online `cdk8s import` step.
  const cliRequire = createRequire(require.resolve('cdk8s-cli/package.json'));
  const cli = cliRequire('./package.json');
  const template = join(work, 'typescript-app-template');
  cpSync(join(ROOT, 'node_modules/cdk8s-cli/templates/typescript-app'), template, { recursive: true });
  const hook = join(template, '.hooks.sscaff.js');
  const importStep = "  execSync('npm run import', { stdio: 'inherit', env });\n";
  expect(readFileSync(hook, 'utf8')).toContain(importStep);
  writeFileSync(
    hook,
    readFileSync(hook, 'utf8').replace(importStep, '').replaceAll("stdio: 'inherit'", "stdio: 'pipe'"),
  );
  const { sscaff } = cliRequire('sscaff');
  await sscaff(template, app, {
    cdk8s_core_version: cliRequire('cdk8s/package.json').version,
    cdk8s_plus_version: cliRequire('cdk8s-plus-33/package.json').version,
    constructs_version: cli.dependencies.constructs.replace('^', ''),
    cdk8s_cli_spec: `^${cli.version}`,
  });
  expect(JSON.parse(readFileSync(join(app, 'tsconfig.json'), 'utf8')).compilerOptions.module).toBe('CommonJS');

  await npm(app, 'install', tarball);
  writeFileSync(
    join(app, 'main.ts'),
    `import { Construct } from 'constructs';
import { App, Chart, ChartProps } from 'cdk8s';
import { DevelopmentTracingStack, ShellOperator, Website, WebsiteCrd, WebsiteOperator } from 'website-stack';

export class MyChart extends Chart {
  constructor(scope: Construct, id: string, props: ChartProps = { }) {
    super(scope, id, props);
${PLATFORM_CHART}
  }
}

const app = new App();
new MyChart(app, 'platform');
new ShellOperator(new Chart(app, 'shell'), 'shell', { group: 'sites.acme.io', namespace: 'sites-shell' });
new DevelopmentTracingStack(new Chart(app, 'tracing'), 'tracing');
app.synth();
`,
  );
  await npm(app, 'run', 'compile');
  await npm(app, 'run', 'synth');

  const objects = manifests(join(app, 'dist'));
  expectPlatform(objects);
  const script = only(objects, 'ConfigMap', 'website-shell-operator').data['website-shell-operator.sh'];
  expect(script).toBe(readFileSync(join(ROOT, 'lib/shell-operator/website-shell-operator.sh'), 'utf8'));
  expect(objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual(
    expect.arrayContaining(['website-operator', 'website-shell-operator', 'jaeger', 'otel-collector', 'hotrod']),
  );
  expectNoOperatorRuntime(app);
}, 900_000);

/** A fresh app: package.json, tsconfig.json and source files; the tarball and `peers` installed. */
async function freshApp(
  name: string,
  type: 'module' | 'commonjs',
  compilerOptions: Record<string, unknown>,
  files: Record<string, string>,
  peers?: Record<string, string>,
): Promise<string> {
  const app = join(work, name);
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type }, null, 2));
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify(
      { compilerOptions: { strict: true, target: 'ES2022', outDir: 'build', ...compilerOptions }, include: ['*.ts'] },
      null,
      2,
    ),
  );
  for (const [file, text] of Object.entries(files)) writeFileSync(join(app, file), text);
  const pins = Object.entries(peers ?? {}).map(([pkg, version]) => `${pkg}@${version}`);
  await npm(app, 'install', tarball, ...pins);
  return app;
}

/** The ```ts examples that import from 'website-stack' of the README and of every page of docs/, in order. */
function docsExamples(): string[] {
  const pages = ['README.md'];
  for (const file of readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' }).sort())
    if (file.endsWith('.md')) pages.push(join('docs', file));
  const text = pages.map((page) => readFileSync(join(ROOT, page), 'utf8')).join('\n');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => m[1])
    .filter((code) => code.includes("from 'website-stack'"));
}

test("an ES module app runs the examples of the README and docs/ as written; the constructs example's CRD reaches its operator's Service", async () => {
  const examples = docsExamples();
  expect(examples.length).toBeGreaterThanOrEqual(2);
  // Each example writes into dist/ (cdk8s's default outdir), so each runs in an app of its own.
  for (const [index, example] of examples.entries()) {
    const app = await freshApp(
      `esm-docs-${index}`,
      'module',
      { module: 'NodeNext', moduleResolution: 'NodeNext' },
      { 'main.ts': example },
    );
    await tsc(app, '-p', '.');
    await node(app, 'build/main.js');
    const objects = manifests(join(app, 'dist'));
    expect(objects.length).toBeGreaterThan(0);
    if (example.includes('WebsiteOperator')) {
      // The pair docs/use/constructs.md promises: the CRD's conversion webhook is the operator's own Service.
      const crd = only(objects, 'CustomResourceDefinition');
      const operator = only(objects, 'Deployment', 'website-operator');
      const service = only(objects, 'Service', crd.spec.conversion.webhook.clientConfig.service.name);
      expect(crd.spec.conversion.webhook.clientConfig.service.namespace).toBe(operator.metadata.namespace);
      expect(service.metadata.namespace).toBe(operator.metadata.namespace);
      expect(service.spec.ports.map((p: { port: number }) => p.port)).toContain(
        crd.spec.conversion.webhook.clientConfig.service.port,
      );
      expect(service.spec.selector).toEqual(expect.objectContaining({ 'app.kubernetes.io/name': 'website-operator' }));
      expect(operator.spec.template.metadata.labels).toEqual(expect.objectContaining(service.spec.selector));
    }
    expectNoOperatorRuntime(app);
  }
}, 900_000);

for (const [age, peers] of Object.entries(PEERS)) {
  test(`an app on the ${age} peers the package claims (constructs ${peers.constructs}, cdk8s ${peers.cdk8s}, cdk8s-plus-34 ${peers['cdk8s-plus-34']}) type-checks and synthesizes`, async () => {
    // The oldest in a CommonJS app resolved the legacy way (node10), the newest in an ES module app resolved as bundlers do.
    const commonjs = age === 'oldest';
    const app = await freshApp(
      `peers-${age}`,
      commonjs ? 'commonjs' : 'module',
      commonjs ? { module: 'CommonJS', moduleResolution: 'Node10' } : { module: 'ESNext', moduleResolution: 'Bundler' },
      {
        'main.ts': `import { App, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { Website, WebsiteCrd, WebsiteOperator } from 'website-stack';

class Platform extends Chart {
  constructor(scope: Construct, id: string) {
    super(scope, id);
${PLATFORM_CHART}
  }
}

const app = new App();
new Platform(app, 'platform');
app.synth();
`,
      },
      peers,
    );
    for (const [pkg, version] of Object.entries(peers))
      expect(`${pkg}@${versionIn(app, pkg)}`).toBe(`${pkg}@${version}`);
    // The peer ranges hold these versions.
    for (const [pkg, version] of Object.entries(peers)) {
      expect(
        `${pkg}@${version} in ${rootPackage.peerDependencies[pkg]}: ${semver.satisfies(version, rootPackage.peerDependencies[pkg])}`,
      ).toBe(`${pkg}@${version} in ${rootPackage.peerDependencies[pkg]}: true`);
    }
    await tsc(app, '-p', '.');
    await node(app, 'build/main.js');
    expectPlatform(manifests(join(app, 'dist')));
    expectNoOperatorRuntime(app);
  }, 600_000);
}
