// The chaos run's own parts that need no cluster (harness/chaos/chaos.ts): judging writes against Lease
// holders from audit records, grouping log lines, and the black-hole proxy on loopback sockets.
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { BlackHoleProxy, group, nonLeaderWrites, normalize } from '../../harness/chaos/chaos.ts';
import type { AuditEvent } from '../../harness/cluster/audit.ts';

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0) + seconds * 1000).toISOString();
const lease = (identity: string, seconds: number, holder = identity, duration = 15): AuditEvent => ({
  stage: 'ResponseComplete',
  verb: 'update',
  userAgent: `website-operator/${identity}`,
  objectRef: { resource: 'leases', name: 'website-operator' },
  responseStatus: { code: 200 },
  requestReceivedTimestamp: at(seconds - 0.01),
  stageTimestamp: at(seconds),
  requestObject: { spec: { holderIdentity: holder || undefined, leaseDurationSeconds: duration } },
});
const write = (identity: string, seconds: number, verb = 'patch'): AuditEvent => ({
  stage: 'ResponseComplete',
  verb,
  userAgent: `website-operator/${identity}`,
  objectRef: { resource: 'deployments', name: 'website-a' },
  responseStatus: { code: 200 },
  requestReceivedTimestamp: at(seconds),
  stageTimestamp: at(seconds + 0.01),
});

describe('nonLeaderWrites', () => {
  test("a write while another replica holds an unexpired Lease is a violation; the holder's own writes are not", () => {
    const result = nonLeaderWrites([lease('a', 0), write('a', 1), lease('b', 20), write('b', 21), write('a', 22)]);
    expect(result.writes).toBe(3);
    expect(result.holders).toEqual(['a', 'b']);
    expect(result.violations).toHaveLength(1);
    expect(result.violations[0].what).toBe('patch deployments website-a by a');
    expect(result.violations[0].detail).toContain('b held the Lease');
  });

  test("the old leader's last writes count only once the new holder's Lease is stored, not while its own had not expired", () => {
    // a renewed at 0 for 15 s and writes at 14 s; b takes over only at 16 s.
    expect(nonLeaderWrites([lease('a', 0), write('a', 14), lease('b', 16)]).violations).toEqual([]);
    // A write received after b stored its Lease is b's time.
    expect(nonLeaderWrites([lease('a', 0), lease('b', 16), write('a', 16.5)]).violations).toHaveLength(1);
  });

  test('after the holder expired or released the Lease, nobody holds it', () => {
    expect(nonLeaderWrites([lease('b', 0, 'b', 4), write('a', 5)]).violations).toEqual([]);
    expect(nonLeaderWrites([lease('b', 0), lease('b', 1, ''), write('a', 2)]).violations).toEqual([]);
  });

  test("refused Lease writes, other users' writes and reads do not count", () => {
    const refused = { ...lease('b', 0), responseStatus: { code: 409 } };
    expect(nonLeaderWrites([refused, write('a', 1)]).violations).toEqual([]);
    const other = { ...write('x', 1), userAgent: 'kubectl/v1.36' };
    expect(nonLeaderWrites([lease('b', 0), other, write('a', 2, 'get'), write('a', 2, 'watch')]).writes).toBe(0);
  });
});

describe('grouping', () => {
  test('names, uids, pod hashes and numbers are normalized, so alike lines group with one example', () => {
    const lines = [
      'Deployment website-chaos-00012 replicas 2: Operation cannot be fulfilled on 3f2504e0-4f89-11d3-9a0c-0305e82c3301',
      'Deployment website-chaos-00977 replicas 1: Operation cannot be fulfilled on 6ba7b810-9dad-11d1-80b4-00c04fd430c8',
      'Pod website-chaos-00001-5d8f7c6b9d-x2x7q evicted',
    ];
    const groups = group(lines.map((line) => ({ key: normalize(line, 'chaos'), example: line })));
    expect(groups).toEqual([
      {
        key: 'Deployment website-chaos-… replicas N: Operation cannot be fulfilled on <uid>',
        count: 2,
        example: lines[0],
      },
      { key: 'Pod website-chaos-…-<pod> evicted', count: 1, example: lines[2] },
    ]);
  });
});

describe('BlackHoleProxy', () => {
  test('forwards until black-holed; then open connections go silent without a close, and new connections work', async () => {
    const server = createServer((socket) => socket.on('data', (data) => socket.write(data)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const proxy = await BlackHoleProxy.start({ host: '127.0.0.1', port: (server.address() as { port: number }).port });
    const open = async () => {
      const socket = connect(proxy.port, '127.0.0.1');
      await once(socket, 'connect');
      return socket;
    };
    const echo = (socket: Socket, text: string) =>
      new Promise<string | 'silent' | 'closed'>((resolve) => {
        const timer = setTimeout(() => resolve('silent'), 500);
        socket.once('data', (data) => {
          clearTimeout(timer);
          resolve(data.toString());
        });
        socket.once('close', () => {
          clearTimeout(timer);
          resolve('closed');
        });
        socket.write(text);
      });
    try {
      const old = await open();
      expect(await echo(old, 'before')).toBe('before');
      expect(proxy.blackHole()).toBe(1);
      expect(await echo(old, 'after')).toBe('silent');
      expect(old.destroyed).toBe(false);
      const fresh = await open();
      expect(await echo(fresh, 'new')).toBe('new');
      old.destroy();
      fresh.destroy();
    } finally {
      await proxy.close();
      server.close();
    }
  });
});
