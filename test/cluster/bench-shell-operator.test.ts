// The shell operator benchmark run as a user runs it (`node bench/shell-operator.ts`), small.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { KUBECONFIG, KUBECTL, ROOT } from '../../harness/cluster/env.ts';

describe('the shell operator benchmark', () => {
  test('measures every Website within one interval and cycle, and counts one list plus two applies per Website per cycle', async () => {
    const n = 4;
    const interval = 2;
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        join(ROOT, 'bench/shell-operator.ts'),
        '--n',
        String(n),
        '--interval',
        String(interval),
        '--cycles',
        '2',
        '--json',
      ],
      { env: { ...process.env, KUBECONFIG, KUBECTL }, maxBuffer: 16 << 20 },
    );
    const [result] = JSON.parse(stdout);

    expect(result).toMatchObject({ operator: 'shell', n, intervalSeconds: interval });
    const { p50, p90, p99, max } = result.latencyMs;
    expect(0).toBeLessThan(p50);
    expect([p50, p90, p99]).toEqual([...[p50, p90, p99]].sort((a, b) => a - b));
    expect(p99).toBeLessThanOrEqual(max);
    // A Website waits at most for the rest of a sleep and the cycles it spans: the one running when
    // it was created and the next, as long as the operator's log says those cycles took (on a busy
    // machine, much longer than the steady ones), and a second for the watches that see it.
    expect(result.creationCycleMs.length).toBeGreaterThan(0);
    expect(max).toBeLessThan(interval * 1000 + 2 * Math.max(...result.creationCycleMs, ...result.cycleMs) + 1000);
    expect(result.cycleMs).toHaveLength(2);

    // Steady state: discovery is cached, so one LIST and one server-side apply per child, nothing else.
    expect(result.requestsPerCycleByKind).toEqual({
      'LIST websites': 1,
      'APPLY deployments': n,
      'APPLY services': n,
      other: 0,
    });
    expect(result.requestsPerCycle).toBe(1 + 2 * n);

    // With --json the table goes to stderr.
    expect(stderr).toMatch(/^shell operator\s+N=4$/m);
    expect(stderr).toMatch(/^API requests \/ cycle\s+\d+\.\d$/m);
  });
});
