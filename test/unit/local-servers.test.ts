// The local servers' scripts (Elasticsearch, Keycloak, Cassandra) given an address this machine does
// not have: one clear line that says to start the real node first, before anything is installed,
// fetched or started. 192.0.2.1 is TEST-NET-1 (RFC 5737), never a machine's address.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPTS = fileURLToPath(new URL('../../scripts', import.meta.url));

test.each(['elasticsearch', 'keycloak', 'cassandra'])('%s.sh start on an address not on this machine', (server) => {
  const dir = mkdtempSync(join(tmpdir(), `${server}-`));
  try {
    const r = spawnSync('bash', [join(SCRIPTS, `${server}.sh`), 'start', dir, '20999', '192.0.2.1'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toBe(
      `[${server}] error: address 192.0.2.1 is not on this machine: start the real node first (sudo npm run cluster:up -- --real-node), which adds its host address 172.31.254.1, or give an address that \`ip addr\` lists`,
    );
    expect(readdirSync(dir)).toEqual([]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
