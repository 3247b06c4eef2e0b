// The local servers' scripts (Elasticsearch, Keycloak, Cassandra) given an address this machine does
// not have: one clear line that says to start the real node first, before anything is installed,
// fetched or started. 203.0.113.77 is in TEST-NET-3 (RFC 5737), kept for documentation: no machine
// of ours has it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPTS = fileURLToPath(new URL('../../scripts', import.meta.url));

test.each(['elasticsearch', 'keycloak', 'cassandra'])('%s.sh start on an address not on this machine', (server) => {
  const dir = mkdtempSync(join(tmpdir(), `${server}-`));
  try {
    const r = spawnSync('bash', [join(SCRIPTS, `${server}.sh`), 'start', dir, '20999', '203.0.113.77'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(
      `[${server}] error: address 203.0.113.77 is not on this machine: start the real node first (sudo npm run cluster:up -- --real-node), which adds its host address 172.31.254.1, or give an address that \`ip addr\` lists`,
    );
    expect(readdirSync(dir)).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every address `ip addr` lists, and any of 127.0.0.0/8, counts as this machine's", () => {
  const listed = spawnSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' }).stdout;
  const addresses = [...listed.matchAll(/ inet ([\d.]+)\//g)].map((m) => m[1]);
  expect(addresses).toContain('127.0.0.1');
  for (const address of [...addresses, '127.0.0.5']) {
    const r = spawnSync(
      'bash',
      [
        '-c',
        `set -euo pipefail; die() { echo "$*" >&2; exit 1; }; source "${SCRIPTS}/lib/local-ports.sh"; require_local_address`,
      ],
      { encoding: 'utf8', env: { ...process.env, LISTEN_ADDRESS: address } },
    );
    expect([address, r.status, r.stderr]).toEqual([address, 0, '']);
  }
});
