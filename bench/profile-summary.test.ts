import { cpuSelfTime, frameModule, heapByPackage, moduleStarts, packageOf } from './profile-summary.ts';

const chunk = [
  "import { createRequire } from 'node:module';",
  '// node_modules/undici/lib/core/util.js',
  'function parseHeaders() {}',
  '// node_modules/@kubernetes/client-node/dist/informer.js',
  'function makeInformer() {}',
  '// operator/src/controller/informer.ts',
  'class Informer {}',
].join('\n');
const url = 'file:///app/operator.mjs';
const chunks = new Map([[url, moduleStarts(chunk)]]);
const frame = (functionName: string, lineNumber: number, at = url) => ({ functionName, url: at, lineNumber });

describe('profile summaries', () => {
  test('a position in the bundle names the module whose code holds it, and its package', () => {
    expect(frameModule(frame('parseHeaders', 2), chunks)).toBe('node_modules/undici/lib/core/util.js');
    expect(frameModule(frame('makeInformer', 4), chunks)).toBe('node_modules/@kubernetes/client-node/dist/informer.js');
    expect(frameModule(frame('', 0), chunks)).toBe('(bundle prelude)');
    expect(frameModule(frame('readFile', 10, 'node:fs'), chunks)).toBe('node:fs');
    expect(frameModule(frame('(garbage collector)', -1, ''), chunks)).toBe('((garbage collector))');
    expect(packageOf('node_modules/@kubernetes/client-node/dist/informer.js')).toBe('@kubernetes/client-node');
    expect(packageOf('node_modules/undici/lib/core/util.js')).toBe('undici');
    expect(packageOf('operator/src/controller/informer.ts')).toBe('operator/src/controller');
    expect(packageOf('lib/workload/page.ts')).toBe('lib/workload');
  });

  test('CPU self time adds each sample to the function it was taken in', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', -1, ''), children: [2, 3] },
        { id: 2, callFrame: frame('parseHeaders', 2) },
        { id: 3, callFrame: frame('Informer', 6) },
      ],
      samples: [2, 2, 3, 2],
      timeDeltas: [1000, 2000, 3000, 2000],
    };
    const { total, functions, packages } = cpuSelfTime(profile, chunks);
    expect(total).toBe(8);
    expect(functions[0]).toEqual({
      name: 'parseHeaders node_modules/undici/lib/core/util.js:3',
      value: 5,
      share: 5 / 8,
    });
    expect(packages.map((p) => [p.name, p.value])).toEqual([
      ['undici', 5],
      ['operator/src/controller', 3],
    ]);
  });

  test("live heap goes to the nearest bundle frame above it: V8's own allocation to the code that called it", () => {
    const head = {
      callFrame: frame('(root)', -1, ''),
      selfSize: 0,
      children: [
        {
          callFrame: frame('makeInformer', 4),
          selfSize: 100,
          children: [{ callFrame: frame('set', 0, 'node:internal/map'), selfSize: 300, children: [] }],
        },
        { callFrame: frame('(V8 API)', -1, ''), selfSize: 50, children: [] },
      ],
    };
    const { total, packages } = heapByPackage(head, chunks);
    expect(total).toBe(450);
    expect(packages.map((p) => [p.name, p.value])).toEqual([
      ['@kubernetes/client-node', 400],
      ['((V8 API))', 50],
    ]);
  });
});
