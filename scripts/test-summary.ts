// The closing lines of `npm test`: a line for each lane that failed or wrote no results, then the
// tests of every lane counted in one last line, in the plain form any CI reads ("jest: N passed,
// N failed"), followed on a red run by the lanes that failed. A lane that failed without a failed
// test (no results, a suite that could not load, a global setup that threw) counts as one failed,
// so that the count is never 0 on a red run.
//
//   node scripts/test-summary.ts RESULTS_DIR LANE ...
//
// Each lane of scripts/test.sh leaves <lane>.json (jest --json) and <lane>.status (its exit code) in
// RESULTS_DIR. A lane is failed when its exit code is not 0, when jest says it did not succeed (a
// suite that could not run fails no test), or when either file is missing: a lane that never
// reported is never taken for a lane that passed. Exits 1 when any lane failed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface JestResults {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numRuntimeErrorTestSuites: number;
  success: boolean;
}

const [dir, ...lanes] = process.argv.slice(2);
if (!dir || lanes.length === 0) {
  console.error('usage: node scripts/test-summary.ts RESULTS_DIR LANE ...');
  process.exit(2);
}

let passed = 0;
let failed = 0;
let skipped = 0;
const failedLanes: string[] = [];
for (const lane of lanes) {
  const json = join(dir, `${lane}.json`);
  const statusFile = join(dir, `${lane}.status`);
  const status = existsSync(statusFile) ? readFileSync(statusFile, 'utf8').trim() : undefined;
  let results: JestResults | undefined;
  try {
    results = existsSync(json) ? (JSON.parse(readFileSync(json, 'utf8')) as JestResults) : undefined;
  } catch (error) {
    console.log(`[test] lane ${lane}: its results (${json}) are not JSON: ${(error as Error).message}`);
  }
  if (results) {
    passed += results.numPassedTests;
    failed += results.numFailedTests;
    skipped += results.numPendingTests;
  }
  const problems = [
    status === undefined ? 'did not finish (no exit status)' : status !== '0' ? `exited with ${status}` : '',
    results === undefined ? 'wrote no results' : '',
    results && results.numFailedTests > 0 ? `${results.numFailedTests} failed` : '',
    results && results.numRuntimeErrorTestSuites > 0 ? `${results.numRuntimeErrorTestSuites} suites did not run` : '',
    results && !results.success && results.numFailedTests === 0 && results.numRuntimeErrorTestSuites === 0
      ? 'jest reported no success'
      : '',
  ].filter(Boolean);
  if (problems.length > 0) {
    if (!results || results.numFailedTests === 0) failed += 1;
    failedLanes.push(`${lane} (${problems.join(', ')})`);
    console.log(`[test] lane ${lane} FAILED: ${problems.join(', ')}`);
  }
}
const counts = `jest: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
console.log(failedLanes.length > 0 ? `${counts}; lanes failed: ${failedLanes.join('; ')}` : counts);
process.exit(failedLanes.length > 0 ? 1 : 0);
