// The short chaos run of the trace stack (bench/chaos-trace.ts --short; `npm run chaos:trace`
// runs the full one): a gateway with the production settings, in front of Jaeger on Badger, under
// constant load keeps every span it accepted through a Jaeger outage, and refuses OTLP without a
// client certificate on every transport; in front of Jaeger's production collector on a real
// Elasticsearch, it keeps every span through seconds of Elasticsearch refusing connections. Figures (durations, queue peaks) are reported by the run, never asserted here.
import { type FaultResult, traceChaos, type UnauthenticatedResult } from '../../harness/chaos/trace-chaos.ts';

describe('the trace stack under faults (short chaos run)', () => {
  let report: { faults: FaultResult[]; unauthenticated: UnauthenticatedResult[] };
  beforeAll(async () => {
    const { json } = await traceChaos({ short: true, log: (line) => process.stderr.write(`${line}\n`) });
    report = json as typeof report;
  }, 900_000);

  test('through a Jaeger outage under load, every span the gateway accepted is stored: 0 lost, none read twice', () => {
    const outage = report.faults.find((f) => f.fault === 'Jaeger down')!;
    expect(outage.spansAccepted).toBeGreaterThan(0);
    expect({ lost: outage.spansLost, stored: outage.spansStored, readTwice: outage.spansReadTwice }).toEqual({
      lost: 0,
      stored: outage.spansAccepted,
      readTwice: 0,
    });
  });

  test("through a few seconds of Elasticsearch refusing connections under load, every span the gateway accepted is stored by Jaeger's production collector and read back once: 0 lost, none read twice", () => {
    const outage = report.faults.find((f) => f.fault === 'Elasticsearch unreachable')!;
    expect(outage.spansAccepted).toBeGreaterThan(0);
    // The fault reached the collector: the rule turned its packets away while it lasted.
    expect(outage.packetsRefused).toBeGreaterThan(0);
    // Storage may hold a span twice (a bulk request sent again after its answer was lost: at least
    // once, reported as spansDuplicated); what query returns holds each span once.
    expect({ lost: outage.spansLost, readTwice: outage.spansReadTwice }).toEqual({ lost: 0, readTwice: 0 });
  });

  test('OTLP without a client certificate is refused by the production gateway over HTTP, HTTPS and gRPC, and none of it is stored', () => {
    expect(report.unauthenticated.length).toBe(5);
    for (const attempt of report.unauthenticated)
      expect([attempt.transport, attempt.refused, attempt.spansStored]).toEqual([attempt.transport, true, 0]);
  });
});
