// WEBSITE_CAPACITY: the operator states the number of Websites its memory limit was sized for, and
// warns when it holds more, on the in-memory API.
import { PassThrough } from 'node:stream';
import { sumMetric } from '../../harness/process/metrics.ts';
import { eventually } from '../../harness/process/poll.ts';
import { ConfigError, loadConfig } from '../../operator/src/bin/config.ts';
import type { KubeObject } from '../../operator/src/controller/kube-api.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { websitesType } from '../../operator/src/reconciler/website.ts';
import { testOperatorConfig, type WebsiteOperator, websiteOperator } from './operator-config.ts';

const NS = 'team-a';
const WEBSITES = websitesType('web.example.com');
const website = (name: string): KubeObject => ({
  apiVersion: 'web.example.com/v1',
  kind: 'Website',
  metadata: { name, namespace: NS },
  spec: { title: name, replicas: 1, color: '#2196F3' },
});

let running: WebsiteOperator | undefined;
afterEach(async () => {
  await running?.manager.stop();
  running = undefined;
});

test('WEBSITE_CAPACITY: unset, not checked; a positive integer, or a ConfigError naming it', () => {
  expect(loadConfig({}).capacity).toBeUndefined();
  expect(loadConfig({ WEBSITE_CAPACITY: '4000' }).capacity).toBe(4000);
  expect(() => loadConfig({ WEBSITE_CAPACITY: '0' })).toThrow(ConfigError);
  expect(() => loadConfig({ WEBSITE_CAPACITY: 'lots' })).toThrow(/WEBSITE_CAPACITY="lots" is not valid/);
});

test('the capacity is a metric; each rise above it is one warning naming the fix, and every Website is still reconciled', async () => {
  const api = new FakeKubeApi();
  for (const name of ['a', 'b']) await api.create(WEBSITES, website(name));
  const logs: Array<{ level: string; msg: string; websites?: number; capacity?: number }> = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => logs.push(JSON.parse(line.toString())));
  const metrics = new OperatorMetrics({ processMetrics: false });
  const config = testOperatorConfig({ watchNamespaces: [NS], capacity: 2 });
  running = websiteOperator(config, { client: api, logger: createLogger('info', stream), metrics });
  await running.manager.start();
  const warnings = () => logs.filter((l) => l.level === 'warn' && /sized for/.test(l.msg));

  expect(sumMetric(await metrics.registry.metrics(), 'website_capacity')).toBe(2);
  await eventually('a and b reconciled', () => api.peek(WEBSITES, NS, 'b')?.metadata?.finalizers?.length === 1);
  expect(warnings()).toEqual([]);

  await api.create(WEBSITES, website('c'));
  await api.create(WEBSITES, website('d'));
  await eventually('c and d reconciled', () => api.peek(WEBSITES, NS, 'd')?.metadata?.finalizers?.length === 1);
  expect(warnings()).toHaveLength(1);
  expect(warnings()[0]).toMatchObject({ websites: 3, capacity: 2 });
  expect(warnings()[0].msg).toBe(
    "holding 3 Websites, more than the 2 this operator's memory limit was sized for: raise the WebsiteOperator's capacity (it sizes the memory limit), or split Websites across operators by namespace",
  );

  // Back within it, then above it again: warned again.
  for (const name of ['c', 'd']) await api.delete(WEBSITES, { namespace: NS, name });
  await eventually('c and d gone', () => !api.peek(WEBSITES, NS, 'c') && !api.peek(WEBSITES, NS, 'd'));
  await api.create(WEBSITES, website('e'));
  await eventually('a second warning', () => warnings().length === 2);
});
