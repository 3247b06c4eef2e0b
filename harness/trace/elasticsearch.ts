// A real single-node Elasticsearch for the trace tests: a local process run by
// scripts/elasticsearch.sh (no containers), with security on as ECK sets it up: HTTPS with a CA of
// its own, basic auth against the file realm, the superuser `elastic` and the user `jaeger` with the
// role jaeger_writer_reader (scripts/elasticsearch/roles.yml). Its root endpoint (`GET /`, `HEAD /`)
// is a stand-in for the unpublished rest-root module (scripts/elasticsearch/README.md).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { freePort } from '../process/ports.ts';
import { runScript } from '../process/processes.ts';

/** The passwords of the node's two users. */
export interface ElasticsearchUsers {
  /** The superuser. */
  readonly elastic: string;
  /** Jaeger's user: role jaeger_writer_reader, on indices jaeger-* only. */
  readonly jaeger: string;
}

export interface ElasticsearchOptions {
  readonly users: ElasticsearchUsers;
}

/** A running node. */
export interface Elasticsearch {
  /** `https://ADDRESS:PORT`, as Jaeger's `server_urls` takes it. */
  readonly url: string;
  /** The PEM file of the CA that signed the node's certificate (ECK's `ca.crt`). */
  readonly caFile: string;
  /** That CA's PEM text. */
  readonly ca: string;
  /** Stops the node cleanly (then SIGTERM, then SIGKILL); its data stays in its folder. */
  stop(): Promise<void>;
}

/**
 * Starts Elasticsearch with its config, data and logs under `dir` (created if missing), HTTPS on a
 * free port of 127.0.0.1, and resolves once it answers the superuser. The passwords reach the script
 * in its environment, never on a command line. The first call fetches Elasticsearch from Maven
 * Central (cached afterwards).
 */
export async function startElasticsearch(dir: string, options: ElasticsearchOptions): Promise<Elasticsearch> {
  const port = await freePort();
  const env = {
    ...process.env,
    ES_ELASTIC_PASSWORD: options.users.elastic,
    ES_JAEGER_PASSWORD: options.users.jaeger,
  };
  const out = (await runScript('elasticsearch', ['start', dir, String(port)], env)).trim().split('\n').pop()!;
  const { url, caFile } = JSON.parse(out) as { url: string; caFile: string };
  return {
    url,
    caFile,
    ca: readFileSync(caFile, 'utf8'),
    stop: async () => {
      await runScript('elasticsearch', ['stop', dir]);
    },
  };
}

/** What a request to a node needs: its URL, its CA's PEM file and its users' passwords. */
export interface ElasticsearchAccess {
  readonly url: string;
  readonly caFile: string;
  readonly users: ElasticsearchUsers;
}

/** A request to Elasticsearch as `user` (the superuser by default), verified against its CA. */
export async function es(
  services: { readonly elasticsearch: ElasticsearchAccess },
  method: string,
  path: string,
  options: { user?: 'elastic' | 'jaeger'; body?: unknown } = {},
): Promise<{ status: number; body: any }> {
  const { url, caFile, users } = services.elasticsearch;
  const user = options.user ?? 'elastic';
  const body =
    options.body === undefined
      ? []
      : ['-H', 'content-type: application/json', '--data-binary', JSON.stringify(options.body)];
  // curl, not fetch: fetch cannot be told a CA per request.
  return new Promise((resolve, reject) => {
    const child = execFile(
      'curl',
      ['-sS', '--cacert', caFile, '-K', '-', '-X', method, ...body, '-w', '\n%{http_code}', `${url}${path}`],
      (error, stdout) => {
        if (error) return reject(error);
        const lines = stdout.trimEnd().split('\n');
        const status = Number(lines.pop());
        const text = lines.join('\n');
        resolve({ status, body: text ? JSON.parse(text) : undefined });
      },
    );
    // The password on curl's standard input, not its command line.
    child.stdin!.end(`user = "${user}:${users[user]}"\n`);
  });
}
