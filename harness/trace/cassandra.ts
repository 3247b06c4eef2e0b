// A real single-node Apache Cassandra for the trace tests: a local process run by
// scripts/cassandra.sh (no containers), with authentication on (superuser cassandra/cassandra).
import { freePort } from '../process/ports.ts';
import { runScript } from '../process/processes.ts';

/** A running node. */
export interface Cassandra {
  /** host:port of its CQL (native transport) listener, as Jaeger's `connection.servers` takes it. */
  readonly contactPoint: string;
  /** Stops the node (SIGTERM, then SIGKILL); its data stays in its folder. */
  stop(): Promise<void>;
}

/**
 * Starts Cassandra with its data, commit log and logs under `dir` (created if missing), CQL on
 * `address`:`port` (127.0.0.1 and a free port when not given), and resolves once it accepts logins. The first
 * call fetches Cassandra from Maven Central (cached afterwards).
 */
export async function startCassandra(dir: string, port?: number, address?: string): Promise<Cassandra> {
  const cqlPort = port ?? (await freePort());
  const contactPoint = (
    await runScript('cassandra', ['start', dir, String(cqlPort), ...(address ? [address] : [])])
  ).trim();
  return {
    contactPoint,
    stop: async () => {
      await runScript('cassandra', ['stop', dir]);
    },
  };
}
