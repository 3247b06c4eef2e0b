// The short chaos run of the trace stack (bench/chaos-trace.ts --short; `npm run chaos:trace`
// runs the full one): a gateway with the production settings, in front of Jaeger on Badger, under
// constant load keeps every span it accepted through a Jaeger outage, and refuses OTLP without a
// client certificate on every transport. Figures (durations, queue peaks) are reported by the run, never asserted here.
import { type FaultResult, traceChaos, type UnauthenticatedResult } from '../support/trace-chaos.ts';

describe('the trace stack under faults (short chaos run)', () => {
  let report: { faults: FaultResult[]; unauthenticated: UnauthenticatedResult[] };
  beforeAll(async () => {
    const { json } = await traceChaos({ short: true, log: (line) => process.stderr.write(`${line}\n`) });
    report = json as typeof report;
  }, 900_000);

  test('through a Jaeger outage under load, every span the gateway accepted is stored: 0 lost', () => {
    const outage = report.faults.find((f) => f.fault === 'Jaeger down')!;
    expect(outage.spansAccepted).toBeGreaterThan(0);
    expect({ lost: outage.spansLost, stored: outage.spansStored }).toEqual({ lost: 0, stored: outage.spansAccepted });
  });

  test('OTLP without a client certificate is refused by the production gateway over HTTP, HTTPS and gRPC, and none of it is stored', () => {
    expect(report.unauthenticated.length).toBe(5);
    for (const attempt of report.unauthenticated)
      expect([attempt.transport, attempt.refused, attempt.spansStored]).toEqual([attempt.transport, true, 0]);
  });
});
