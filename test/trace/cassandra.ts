// A real single-node Apache Cassandra for the trace tests: a local process run by
// scripts/cassandra.sh (no containers), with authentication on (superuser cassandra/cassandra).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/ports.ts';

const SCRIPT = fileURLToPath(new URL('../../scripts/cassandra.sh', import.meta.url));

/** A running node. */
export interface Cassandra {
  /** host:port of its CQL (native transport) listener, as Jaeger's `connection.servers` takes it. */
  readonly contactPoint: string;
  /** Stops the node (SIGTERM, then SIGKILL); its data stays in its folder. */
  stop(): Promise<void>;
}

function cassandraSh(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', [SCRIPT, ...args], { maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error)
        reject(
          new Error(
            `scripts/cassandra.sh ${args.join(' ')} failed (${typeof error.code === 'number' ? error.code : 1}):\n${stderr.trim()}`,
          ),
        );
      else resolve(stdout);
    });
  });
}

/**
 * Starts Cassandra with its data, commit log and logs under `dir` (created if missing), CQL on
 * 127.0.0.1:`port` (a free port when not given), and resolves once it accepts logins. The first
 * call fetches Cassandra from Maven Central (cached afterwards).
 */
export async function startCassandra(dir: string, port?: number): Promise<Cassandra> {
  const cqlPort = port ?? (await freePort());
  const contactPoint = (await cassandraSh(['start', dir, String(cqlPort)])).trim();
  return {
    contactPoint,
    stop: async () => {
      await cassandraSh(['stop', dir]);
    },
  };
}
