// The local cluster has room for a thousand Websites' Services (scripts/cluster.sh): the API server's
// default range, a /24, holds 253 Services, and without the cluster's second range a user's 254th
// Website got "failed to allocate a serviceIP: range is full" on every retry of its Service, which
// is what raised the requests per new Website of `npm run operator` at N = 1000 (issue 42).
import { createNamespace, deleteNamespace, getJson, ok } from '../../harness/cluster/kube.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('service-range');
});
afterAll(() => deleteNamespace(ns));

test("more Services than the default /24 holds all get a ClusterIP, beyond it from the cluster's /16", async () => {
  const ranges = await getJson(['servicecidr', 'website-stack-services']);
  expect(ranges.spec.cidrs).toEqual(['10.96.0.0/16']);
  const count = 300;
  const services = Array.from({ length: count }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `s${i}`, namespace: ns },
    spec: { ports: [{ port: 80 }], selector: { app: `s${i}` } },
  }));
  await ok(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: services }) });
  const ips: string[] = (await getJson(['services', '-n', ns])).items.map(
    (s: { spec: { clusterIP: string } }) => s.spec.clusterIP,
  );
  expect(ips).toHaveLength(count);
  expect(new Set(ips).size).toBe(count);
  expect(ips.filter((ip) => ip.startsWith('10.96.')).length).toBeGreaterThan(0);
}, 120_000);
