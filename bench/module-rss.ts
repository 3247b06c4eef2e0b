// What each package the operator loads at start adds to an idle process's RSS: each one alone,
// bundled the way the operator is (operator/bundle.ts) and run the way dist/ runs it (the
// image's Node flags, the Deployment's NODE_OPTIONS and MALLOC_ARENA_MAX), against an entry that loads nothing, in the
// same run; then all of them in one process. Loading is not all of a package's cost (the
// operator's caches, its connection and its first render come later), but it is what an idle
// operator pays before it has any Website.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { steadyRss } from '../harness/process/proc.ts';
import { OPERATOR_NODE_FLAGS } from '../lib/operator/operator-deployment.ts';
import { buildOperator } from '../operator/bundle.ts';
import { deploymentEnv } from './operator.ts';

/**
 * The packages, by the names the operator imports from them: an entry imports those names and keeps
 * them reachable, so that tree shaking keeps of each package what the operator's bundle keeps.
 */
export const OPERATOR_MODULES: ReadonlyArray<{
  readonly title: string;
  readonly from: string;
  readonly names: string[];
}> = [
  { title: '`@kubernetes/client-node`', from: '@kubernetes/client-node', names: ['KubeConfig', 'RequestContext'] },
  { title: '`undici`', from: 'undici', names: ['Agent', 'buildConnector', 'request'] },
  { title: '`pino`', from: 'pino', names: ['pino'] },
  {
    title: '`prom-client`',
    from: 'prom-client',
    names: ['Counter', 'collectDefaultMetrics', 'Gauge', 'Histogram', 'Registry'],
  },
  { title: '`@opentelemetry/api`', from: '@opentelemetry/api', names: ['context', 'propagation', 'trace'] },
  {
    title: "the Website's constructs (`cdk8s`, `cdk8s-plus-34`, `constructs`, `lib/`)",
    from: '../../../operator/src/reconciler/render.ts',
    names: ['renderWorkload'],
  },
];

export interface ModuleRss {
  readonly title: string;
  /** RSS of an entry loading this package alone, over the entry that loads nothing, in bytes. */
  readonly alone: number;
  /**
   * RSS of the entry loading every package, over the entry loading every package but this one:
   * what this one adds beside the others (Node's built-in modules they share, such as tls and
   * http2, count in `alone` but not here).
   */
  readonly marginal: number;
}

/** Idle RSS of an entry importing `modules`, bundled and run as dist/ runs the operator. */
async function idleRss(dir: string, name: string, modules: typeof OPERATOR_MODULES): Promise<number> {
  const entry = join(dir, `${name}.ts`);
  await writeFile(
    entry,
    [
      ...modules.map((m) => `import { ${m.names.join(', ')} } from '${m.from}';`),
      `Object.assign(globalThis, { kept: [${modules.flatMap((m) => m.names).join(', ')}] });`,
      'setInterval(() => {}, 1000);',
      "process.stdout.write('loaded\\n');",
      '',
    ].join('\n'),
  );
  const build = await buildOperator(join(dir, name), entry);
  const child = spawn(process.execPath, [...OPERATOR_NODE_FLAGS, build.entry], {
    env: { PATH: process.env.PATH, ...deploymentEnv() },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
    if (!chunk.toString().startsWith('loaded')) throw new Error(`${name} printed ${JSON.stringify(`${chunk}`)}`);
    return await steadyRss(child.pid!);
  } finally {
    child.kill();
  }
}

/**
 * Each of OPERATOR_MODULES's idle RSS, alone and beside the others, and all of them in one process
 * over the entry that loads nothing; entries written and bundled under `dir`.
 */
export async function idleRssByModule(dir: string): Promise<{ nothing: number; modules: ModuleRss[]; all: number }> {
  await mkdir(dir, { recursive: true });
  const nothing = await idleRss(dir, 'nothing', []);
  const all = await idleRss(dir, 'all', OPERATOR_MODULES);
  const modules: ModuleRss[] = [];
  for (const [i, module] of OPERATOR_MODULES.entries()) {
    const alone = (await idleRss(dir, `only-${i}`, [module])) - nothing;
    const others = OPERATOR_MODULES.filter((m) => m !== module);
    modules.push({ title: module.title, alone, marginal: all - (await idleRss(dir, `all-but-${i}`, others)) });
  }
  return { nothing, modules, all: all - nothing };
}
