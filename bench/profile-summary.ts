// What a CPU profile and a sampling heap profile of the operator bundle say, by function and by
// package: `npm run bench:profile` prints these tables. The bundle has no source maps (they would
// stay in the operator's memory), but esbuild heads each module's code with a `// <path>` comment,
// so a position in a chunk names the module it is in.

/** A frame of a V8 profile (Runtime.CallFrame). */
export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  /** 0-based. */
  readonly lineNumber: number;
}

/** Profiler.Profile (a .cpuprofile file). */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: CallFrame; readonly children?: number[] }>;
  readonly samples: readonly number[];
  /** Microseconds since the previous sample. */
  readonly timeDeltas: readonly number[];
}

/** HeapProfiler.SamplingHeapProfile: live objects, by the stack that allocated them. */
export interface HeapNode {
  readonly callFrame: CallFrame;
  readonly selfSize: number;
  readonly children: readonly HeapNode[];
}

export interface Row {
  readonly name: string;
  readonly value: number;
  readonly share: number;
}

/** Where each module of a chunk starts: its `// <path>` comments, by 0-based line. */
export function moduleStarts(chunk: string): Array<{ line: number; path: string }> {
  const starts: Array<{ line: number; path: string }> = [];
  chunk.split('\n').forEach((text, line) => {
    const match = /^\/\/ ((?:node_modules|operator|lib|harness)\/\S+)$/.exec(text);
    if (match) starts.push({ line, path: match[1] });
  });
  return starts;
}

/** The package a module path belongs to: `@kubernetes/client-node`, `undici`, or our folder (`operator/src/controller`). */
export function packageOf(path: string): string {
  const inModules = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (inModules) return inModules[1];
  return path
    .split('/')
    .slice(0, path.startsWith('operator/src/') ? 3 : 2)
    .join('/');
}

/**
 * Names a frame's module: for a bundle chunk (`chunks`: its text by URL), the module whose code
 * holds the line; `node:` internals and V8's own entries by their URL or function name.
 */
export function frameModule(
  frame: CallFrame,
  chunks: ReadonlyMap<string, Array<{ line: number; path: string }>>,
): string {
  const starts = chunks.get(frame.url);
  if (starts) {
    let found = '(bundle prelude)';
    for (const start of starts) {
      if (start.line > frame.lineNumber) break;
      found = start.path;
    }
    return found;
  }
  if (frame.url.startsWith('node:')) return frame.url;
  if (frame.url) return frame.url;
  return `(${frame.functionName || 'anonymous'})`;
}

function rows(totals: Map<string, number>, limit: number): Row[] {
  const sum = [...totals.values()].reduce((a, b) => a + b, 0) || 1;
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([name, value]) => ({ name, value, share: value / sum }));
}

function add(totals: Map<string, number>, key: string, value: number): void {
  totals.set(key, (totals.get(key) ?? 0) + value);
}

/** Self time (ms) by function and by package, the largest first; `total` is every sample's time. */
export function cpuSelfTime(
  profile: CpuProfile,
  chunks: ReadonlyMap<string, Array<{ line: number; path: string }>>,
  limit = 25,
): { total: number; functions: Row[]; packages: Row[] } {
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const ms = (selfUs.get(node.id) ?? 0) / 1000;
    if (ms === 0) continue;
    total += ms;
    const module = frameModule(node.callFrame, chunks);
    add(functions, `${node.callFrame.functionName || '(anonymous)'} ${module}:${node.callFrame.lineNumber + 1}`, ms);
    add(packages, chunks.has(node.callFrame.url) ? packageOf(module) : module, ms);
  }
  return { total, functions: rows(functions, limit), packages: rows(packages, limit) };
}

/**
 * Live heap (bytes) by the package whose code allocated it: each sample is charged to the nearest
 * frame on its stack that is in the bundle (a Map's growth inside V8 goes to the code that called
 * set). Also by allocating function.
 */
export function heapByPackage(
  head: HeapNode,
  chunks: ReadonlyMap<string, Array<{ line: number; path: string }>>,
  limit = 25,
): { total: number; packages: Row[]; functions: Row[] } {
  const packages = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  const walk = (node: HeapNode, owner: string | undefined, ownerFunction: string | undefined) => {
    const inBundle = chunks.has(node.callFrame.url);
    const module = frameModule(node.callFrame, chunks);
    const here = inBundle ? packageOf(module) : owner;
    const hereFunction = inBundle
      ? `${node.callFrame.functionName || '(anonymous)'} ${module}:${node.callFrame.lineNumber + 1}`
      : ownerFunction;
    if (node.selfSize > 0) {
      total += node.selfSize;
      add(packages, here ?? module, node.selfSize);
      add(functions, hereFunction ?? module, node.selfSize);
    }
    for (const child of node.children) walk(child, here, hereFunction);
  };
  walk(head, undefined, undefined);
  return { total, packages: rows(packages, limit), functions: rows(functions, limit) };
}

/** A table of rows as markdown: name, value in `unit`, share. */
export function rowsTable(title: string, unit: string, list: readonly Row[], format: (v: number) => string): string {
  return [
    `| ${title} | ${unit} | share |`,
    '| --- | ---: | ---: |',
    ...list.map(
      (r) => `| \`${r.name.replaceAll('|', '\\|')}\` | ${format(r.value)} | ${(r.share * 100).toFixed(1)} % |`,
    ),
  ].join('\n');
}
