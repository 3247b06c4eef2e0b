// The operator as it ships: operator/src/bin/operator.ts and everything it imports bundled by esbuild
// into operator/build/ (git-ignored), an ES module for Node 22 plus chunks (.mjs: the image holds no
// package.json to say so). What runs it: the image
// (the Dockerfile's build stage runs this script), `npm run operator`, and harness/operator/operator-process.ts
// (the cluster tests and the benchmark), so all three exercise the same files.
//
//   node operator/bundle.ts [outdir]    then: node operator/build/operator.mjs
//
// Why a bundle: Node loading the sources (type stripping) or tsc's output keeps every module of the
// import graph in memory, most of which the operator never calls; bundling with tree shaking halves
// the idle RSS (docs/measure/benchmarks.md, "Memory"). Code splitting puts what only some
// configurations need into chunks that dynamic import() loads on demand: the conversion webhook
// (webhook-component.ts and its X.509 code) and the OpenTelemetry SDK (tracing-sdk.ts).
//
// Idempotent and safe to run while an operator runs from the same folder (the test projects may
// build in parallel): a file is written only when its content changed (to a temporary name, then
// renamed), and chunk names carry a content hash, so an unchanged build touches nothing.
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Where the bundle goes; the image copies it to /app. */
export const OPERATOR_BUILD_DIR = join(ROOT, 'operator/build');
/** The entry chunk's file name in that folder. */
export const OPERATOR_ENTRY = 'operator.mjs';
/** esbuild's metafile of the last build (which source went into which chunk), beside the bundle; not part of the image. */
export const OPERATOR_METAFILE = 'meta.json';

/**
 * Packages whose modules only declare things, so esbuild may drop every module whose exports go
 * unused. client-node declares no `sideEffects` field, so esbuild has to keep every module it
 * reaches: its index imports cache.js, which imports the serializer, whose type map references all
 * 700 generated models (600 KB of JavaScript the operator never calls; it uses KubeConfig, Watch and
 * RequestContext). Its only import-time effect is polyfill.js, which sets globalThis.File where
 * Node < 20 lacks it (Node 22 has it). The library's own modules (lib/, imports/) are covered by the
 * root package.json's `"sideEffects": false`, so the trace-stack constructs stay out too.
 */
const SIDE_EFFECT_FREE_PACKAGES = ['@kubernetes/client-node'];

function sideEffectFreePackages(packages: readonly string[]): esbuild.Plugin {
  const escaped = packages.map((p) => p.replace(/[/.]/g, '\\$&')).join('|');
  const inPackage = new RegExp(`/node_modules/(${escaped})/`);
  return {
    name: 'side-effect-free-packages',
    setup(build) {
      // The packages by name (esbuild resolves them as usual)...
      build.onResolve({ filter: new RegExp(`^(${escaped})(/|$)`) }, async (args) => {
        if (args.pluginData === 'resolving') return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          with: args.with,
          pluginData: 'resolving',
        });
        return resolved.errors.length > 0 ? undefined : { ...resolved, sideEffects: false };
      });
      // ...and the relative imports between their files, which name the file itself ('./gen/index.js').
      build.onResolve({ filter: /^\.\.?\// }, (args) =>
        inPackage.test(args.importer) ? { path: join(args.resolveDir, args.path), sideEffects: false } : undefined,
      );
    },
  };
}

/**
 * undici as the operator uses it: `import ... from 'undici'`, from any module, resolves to
 * operator/undici.cjs (undici's own classes and request API, without the index that loads all of
 * undici at start). That file's own `import('undici')` (fetch, which only client-node's unused API
 * clients import) resolves to the package, in a chunk of its own that loads only if it is called.
 */
const LEAN_UNDICI = join(ROOT, 'operator/undici.cjs');

function leanUndici(): esbuild.Plugin {
  return {
    name: 'lean-undici',
    setup(build) {
      build.onResolve({ filter: /^undici$/ }, (args) =>
        args.importer === LEAN_UNDICI ? undefined : { path: LEAN_UNDICI },
      );
    },
  };
}

export interface OperatorBuild {
  readonly dir: string;
  /** Absolute path of the entry chunk. */
  readonly entry: string;
  /** Output files written (changed) and removed (stale) by this build, relative to `dir`. */
  readonly written: string[];
  readonly removed: string[];
  readonly metafile: esbuild.Metafile;
}

/**
 * The chunk with every character outside ASCII written as a `\u` escape. esbuild escapes them in
 * code already, but keeps the packages' comments as they are (undici's say "request’s"): one such
 * character makes V8 hold the whole source, which it keeps for lazy compilation, as two bytes per
 * character, 4.4 MiB instead of 2.2 for the entry chunk. In a comment the escape is only text.
 */
export function asciiOnly(contents: Uint8Array): Uint8Array {
  const text = new TextDecoder().decode(contents);
  const escaped = text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped === text ? contents : new TextEncoder().encode(escaped);
}

/**
 * Bundles the operator into `dir` (operator/build by default). Another `entry` is bundled the same
 * way in its place: bench/module-rss.ts measures what each package the operator loads costs.
 */
export async function buildOperator(
  dir = OPERATOR_BUILD_DIR,
  entry = join(ROOT, 'operator/src/bin/operator.ts'),
): Promise<OperatorBuild> {
  const result = await esbuild.build({
    entryPoints: { [basename(OPERATOR_ENTRY, '.mjs')]: entry },
    absWorkingDir: ROOT,
    outdir: dir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // The CommonJS packages (cdk8s, prom-client, pino, undici, ...) call require() for Node's
    // built-in modules; an ES module has no `require`, so every chunk gets one.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    // No source maps: V8 would keep an inline one in memory for the life of the process (cdk8s-plus-34
    // ships 3.5 MB of them); the comments that point to the packages' own maps are dropped too.
    sourcemap: false,
    legalComments: 'none',
    // Stack traces and log lines keep the real class and function names.
    keepNames: true,
    metafile: true,
    write: false,
    logLevel: 'warning',
    plugins: [sideEffectFreePackages(SIDE_EFFECT_FREE_PACKAGES), leanUndici()],
  });
  const files = new Map(result.outputFiles.map((file) => [relative(dir, file.path), asciiOnly(file.contents)]));
  files.set(OPERATOR_METAFILE, new TextEncoder().encode(`${JSON.stringify(result.metafile, null, 1)}\n`));

  const written: string[] = [];
  for (const [name, contents] of files) {
    const path = join(dir, name);
    const current = await readFile(path).catch(() => undefined);
    if (current && Buffer.compare(current, contents) === 0) continue;
    await mkdir(dirname(path), { recursive: true });
    const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
    await writeFile(temporary, contents);
    await rename(temporary, path);
    written.push(name);
  }
  const removed: string[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const name = relative(dir, join(entry.parentPath, entry.name));
    if (entry.isFile() && !files.has(name) && !entry.name.endsWith('.tmp')) {
      await rm(join(dir, name), { force: true });
      removed.push(name);
    }
  }
  return { dir, entry: join(dir, OPERATOR_ENTRY), written, removed, metafile: result.metafile };
}

/** The command line: build, then one line on what was written. */
async function main(): Promise<void> {
  const started = performance.now();
  const build = await buildOperator(process.argv[2] ?? OPERATOR_BUILD_DIR);
  const outputs = Object.entries(build.metafile.outputs);
  const size = outputs.reduce((sum, [, output]) => sum + output.bytes, 0);
  const entry = outputs.find(([path]) => path.endsWith(`/${OPERATOR_ENTRY}`))?.[1].bytes ?? 0;
  process.stderr.write(
    `[build-operator] ${relative(process.cwd(), build.entry) || build.entry}: ${(entry / 2 ** 20).toFixed(1)} MiB entry chunk, ` +
      `${outputs.length} files, ${(size / 2 ** 20).toFixed(1)} MiB in all; ${build.written.length} written, ${build.removed.length} removed ` +
      `(${Math.round(performance.now() - started)} ms)\n`,
  );
}

// No top-level await: test setups that jest loads with require() import this module's graph.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: Error) => {
    process.stderr.write(`[build-operator] ${error.stack ?? error.message}\n`);
    process.exit(1);
  });
}
