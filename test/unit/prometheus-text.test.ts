// The Prometheus text reader the tests and the benchmark share (harness/process/metrics.ts).
import { reconcileWrites, seriesLabels, sumMetric } from '../../harness/process/metrics.ts';

describe('Prometheus text', () => {
  const text = [
    '# HELP rest_client_requests_total API server requests',
    '# TYPE rest_client_requests_total counter',
    'rest_client_requests_total{verb="APPLY",resource="deployments",code="200"} 100',
    'rest_client_requests_total{verb="PATCH",resource="websites",code="200"} 300',
    'rest_client_requests_total{verb="PATCH",resource="websites",code="409"} 2',
    'rest_client_requests_total{verb="UPDATE",resource="leases",code="200"} 50',
    'rest_client_requests_total{verb="CREATE",resource="events",code="201"} 200',
    'rest_client_requests_total{verb="GET",resource="deployments",code="404"} 100',
    'process_cpu_seconds_total 12.5',
  ].join('\n');

  test('sums the samples of one metric whose labels match', () => {
    expect(sumMetric(text, 'rest_client_requests_total', { verb: 'PATCH', resource: 'websites' })).toBe(302);
    expect(sumMetric(text, 'rest_client_requests_total')).toBe(752);
    expect(sumMetric(text, 'process_cpu_seconds_total')).toBe(12.5);
    expect(sumMetric(text, 'missing_total')).toBe(0);
  });

  test("reconcile writes count Websites and children, not the Lease's or events", () => {
    expect(reconcileWrites(text)).toBe(402);
  });

  test('the labels of a series', () => {
    expect(seriesLabels('rest_client_requests_total{verb="PATCH",resource="websites",code="409"}')).toEqual({
      verb: 'PATCH',
      resource: 'websites',
      code: '409',
    });
    expect(seriesLabels('process_cpu_seconds_total')).toEqual({});
  });
});
