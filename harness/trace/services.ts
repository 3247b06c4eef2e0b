// The servers the production trace stack's tests share: one Elasticsearch and one Keycloak per run
// of the trace project, started by its global setup (both take tens of seconds to start) and
// stopped by its global teardown. The tests reach them through `sharedServices()`, from what the
// global setup put in the environment (jest's workers inherit it).
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScript } from '../process/processes.ts';
import { type Elasticsearch, type ElasticsearchUsers, startElasticsearch } from './elasticsearch.ts';
import { type Keycloak, type KeycloakStarted, keycloakAt, startKeycloak } from './keycloak.ts';

const ENV = 'WEBSITE_STACK_TRACE_SERVICES';
/** Where the servers keep their state and logs, for reading after a run. */
export const SERVICES_DIR = fileURLToPath(new URL('../../test-results/trace-services', import.meta.url));

interface Described {
  readonly elasticsearch: { readonly url: string; readonly caFile: string; readonly users: ElasticsearchUsers };
  readonly keycloak: KeycloakStarted;
}

export interface SharedServices {
  readonly elasticsearch: Omit<Elasticsearch, 'stop'> & { readonly users: ElasticsearchUsers };
  readonly keycloak: Omit<Keycloak, 'stop'>;
}

/**
 * Starts both servers for the trace project, side by side, their state and logs under SERVICES_DIR;
 * returns a function stopping them.
 */
export async function startSharedServices(): Promise<() => Promise<void>> {
  const dir = SERVICES_DIR;
  mkdirSync(dir, { recursive: true });
  const password = () => randomBytes(18).toString('base64url');
  const users = { elastic: password(), jaeger: password() };
  // Servers a run that was killed left behind are stopped first (stop is a no-op without one).
  await Promise.all([
    runScript('elasticsearch', ['stop', join(dir, 'elasticsearch')]),
    runScript('keycloak', ['stop', join(dir, 'keycloak')]),
  ]);
  // Elasticsearch starts empty (the tests count indices); Keycloak keeps its database, whose
  // realms a first start imports (tens of seconds more).
  rmSync(join(dir, 'elasticsearch'), { recursive: true, force: true });
  const [es, keycloak] = await Promise.allSettled([
    startElasticsearch(join(dir, 'elasticsearch'), { users }),
    startKeycloak(join(dir, 'keycloak')),
  ]);
  const stop = async () => {
    await Promise.all([es, keycloak].map((s) => (s.status === 'fulfilled' ? s.value.stop() : undefined)));
  };
  if (es.status === 'rejected' || keycloak.status === 'rejected') {
    await stop();
    throw new Error(
      [es, keycloak]
        .filter((s) => s.status === 'rejected')
        .map((s) => String((s as PromiseRejectedResult).reason))
        .join('\n'),
    );
  }
  const started: Described = {
    elasticsearch: { url: es.value.url, caFile: es.value.caFile, users },
    keycloak: keycloak.value.started,
  };
  process.env[ENV] = JSON.stringify(started);
  return stop;
}

/** The servers the global setup started. */
export async function sharedServices(): Promise<SharedServices> {
  const text = process.env[ENV];
  if (!text) throw new Error(`${ENV} is not set: the trace project's global setup starts Elasticsearch and Keycloak`);
  const described = JSON.parse(text) as Described;
  const es = described.elasticsearch;
  return {
    elasticsearch: { ...es, ca: readFileSync(es.caFile, 'utf8') },
    keycloak: await keycloakAt(described.keycloak),
  };
}
