// The closing lines of `npm test` (scripts/test-summary.ts): every lane counted, a lane that failed or
// wrote no results named, and a red run never summed up as "0 failed".
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SUMMARY = fileURLToPath(new URL('../../scripts/test-summary.ts', import.meta.url));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'test-summary-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A lane's results as jest --json writes them, and its exit code. */
function lane(name: string, passed: number, failed: number, status: number, extra: Record<string, unknown> = {}) {
  const results = {
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: 0,
    numRuntimeErrorTestSuites: 0,
    success: failed === 0 && status === 0,
    ...extra,
  };
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(results));
  writeFileSync(join(dir, `${name}.status`), `${status}\n`);
}

function summary(...lanes: string[]) {
  const r = spawnSync(process.execPath, [SUMMARY, dir, ...lanes], { encoding: 'utf8' });
  const lines = r.stdout.trimEnd().split('\n');
  return { status: r.status, lines, last: lines.at(-1) };
}

describe('the summary of npm test', () => {
  test('every lane passed: one plain line of counts over all lanes, exit 0', () => {
    lane('unit', 700, 0, 0);
    lane('cluster', 120, 0, 0);
    expect(summary('unit', 'cluster')).toEqual({
      status: 0,
      lines: ['jest: 820 passed, 0 failed'],
      last: 'jest: 820 passed, 0 failed',
    });
  });

  test('a lane that failed and a lane whose results file is missing are named, counted and fail the run', () => {
    lane('unit', 700, 0, 0);
    lane('trace', 70, 3, 1);
    writeFileSync(join(dir, 'node.status'), '1\n'); // its jest never wrote results
    const { status, lines, last } = summary('unit', 'trace', 'node', 'argocd'); // argocd: nothing at all
    expect(status).toBe(1);
    expect(lines).toContain('[test] lane trace FAILED: exited with 1, 3 failed');
    expect(lines).toContain('[test] lane node FAILED: exited with 1, wrote no results');
    expect(lines).toContain('[test] lane argocd FAILED: did not finish (no exit status), wrote no results');
    // 3 failed tests, and one for each lane that failed with no failed test of its own to count.
    expect(last).toBe(
      'jest: 770 passed, 5 failed; lanes failed: trace (exited with 1, 3 failed); node (exited with 1, wrote no results); argocd (did not finish (no exit status), wrote no results)',
    );
  });

  test('a suite that could not run fails its lane though no test failed', () => {
    lane('cluster', 100, 0, 1, { numRuntimeErrorTestSuites: 1 });
    const { status, last } = summary('cluster');
    expect(status).toBe(1);
    expect(last).toBe('jest: 100 passed, 1 failed; lanes failed: cluster (exited with 1, 1 suites did not run)');
  });

  test('results that are not JSON are a failed lane, not a crash', () => {
    writeFileSync(join(dir, 'unit.json'), '{"numPassedTests": 3');
    writeFileSync(join(dir, 'unit.status'), '0\n');
    const { status, lines } = summary('unit');
    expect(status).toBe(1);
    expect(lines[0]).toMatch(/^\[test\] lane unit: its results \(.*unit\.json\) are not JSON: /);
    expect(lines.at(-1)).toBe('jest: 0 passed, 1 failed; lanes failed: unit (wrote no results)');
  });
});
