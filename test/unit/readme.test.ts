import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const node = join(root, 'node_modules/.bin/node');

/** Runs the README's ```ts example importing `name` from 'website-stack' against the compiled package; returns the YAML it wrote to `file`. */
function runExample(name: string, file: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const example = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]).find((code) => code.includes("from 'website-stack'") && code.includes(name));
  expect(example).toBeDefined();

  const dir = mkdtempSync(join(tmpdir(), 'readme-'));
  try {
    // Compile exactly as `npm run build` does, then import it the way a consumer would: by package name.
    execFileSync(node, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json'), '--outDir', join(dir, 'build')]);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'website-stack', type: 'module', exports: './build/lib/index.js' }));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const outdir = join(dir, 'out');
    const script = example!.replace('new App()', `new App({ outdir: ${JSON.stringify(outdir)} })`);
    writeFileSync(join(dir, 'example.ts'), script);
    execFileSync(node, ['--disable-warning=ExperimentalWarning', join(dir, 'example.ts')], { cwd: dir });
    return readFileSync(join(outdir, file), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('README', () => {
  test("the cdk8s example runs against the compiled package's public entry point", () => {
    const yaml = runExample('WebsiteOperator', 'platform.k8s.yaml');
    expect(yaml).toContain('name: websites.sites.acme.io');
    expect(yaml).toContain('image: registry.acme.io/website-operator:0.1.0');
    expect(yaml).toMatch(/apiVersion: sites\.acme\.io\/v1\nkind: Website/);
  });

  test('the production trace stack example runs against the compiled package', () => {
    const yaml = runExample('ProductionTracingStack', 'tracing.k8s.yaml');
    expect(yaml).toContain('- cassandra.db.svc:9042');
    expect(yaml).toContain('--oidc-issuer-url=https://login.example.com');
    expect(yaml).toContain('client_ca_file: /etc/jaeger/tls/ca.crt');
  });
});
