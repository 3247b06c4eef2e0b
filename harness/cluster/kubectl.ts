// The one kubectl runner of the tests and the benchmark: the real binary against a cluster, as an
// administrator or with a ServiceAccount's bearer token.
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPERATOR_NS } from '../operator/operator-manifests.ts';

/** Where a cluster is and how to reach it as an administrator. */
export interface ClusterAccess {
  /** kubeconfig of a cluster administrator (creates namespaces and tokens, reads /metrics). */
  readonly kubeconfig: string;
  /** kubectl binary. */
  readonly kubectl: string;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  /** Standard input, for example a manifest for `apply -f -`. */
  input?: string;
  /** Authenticate with this bearer token instead of the administrator's kubeconfig. */
  token?: string;
}

/**
 * Go runtime settings for the tests' kubectl processes, thousands of short runs in an `npm test`:
 * one thread for the garbage collector and a quarter as many collections cost 23 % less CPU a run
 * (62 ms against 80, `kubectl create deployment --dry-run=client -o json`, 50 runs each). The
 * caller's own settings win.
 */
const KUBECTL_RUNTIME = { GOMAXPROCS: '1', GOGC: '400' };

/** Runs kubectl against `cluster`; never throws on a non-zero exit. */
export async function kubectl(
  cluster: ClusterAccess,
  args: readonly string[],
  options: KubectlOptions = {},
): Promise<KubectlResult> {
  const auth = options.token ? await tokenFlags(cluster, options.token) : ['--kubeconfig', cluster.kubeconfig];
  return new Promise((resolve) => {
    const child = execFile(
      cluster.kubectl,
      [...auth, ...args],
      { maxBuffer: 256 << 20, env: { ...KUBECTL_RUNTIME, ...process.env } },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
    // A kubectl that exits without reading its input (most commands) may close the pipe first:
    // EPIPE then says nothing that its exit code and stderr do not.
    child.stdin!.on('error', () => {});
    child.stdin!.end(options.input ?? '');
  });
}

/** Like kubectl(), but fails with kubectl's own message when the command fails. */
export async function kubectlOk(
  cluster: ClusterAccess,
  args: readonly string[],
  options: KubectlOptions = {},
): Promise<string> {
  const result = await kubectl(cluster, args, options);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.code}): ${result.stderr.trim()}`);
  return result.stdout;
}

const endpoints = new Map<string, Promise<{ server: string; ca: string }>>();

/**
 * The cluster's address and CA file, from the administrator's kubeconfig: read once per version of
 * that file (a cluster created again in the same place writes a new one).
 */
export function clusterEndpoint(cluster: ClusterAccess): Promise<{ server: string; ca: string }> {
  const key = `${cluster.kubeconfig}@${statSync(cluster.kubeconfig).mtimeMs}`;
  let endpoint = endpoints.get(key);
  if (!endpoint) {
    endpoint = readEndpoint(cluster);
    endpoint.catch(() => endpoints.delete(key));
    endpoints.set(key, endpoint);
  }
  return endpoint;
}

async function readEndpoint(cluster: ClusterAccess): Promise<{ server: string; ca: string }> {
  const config = JSON.parse(await kubectlOk(cluster, ['config', 'view', '--raw', '--minify', '-o', 'json']));
  const c = config.clusters[0].cluster;
  let ca: string = c['certificate-authority'];
  if (!ca) {
    ca = join(await mkdtemp(join(tmpdir(), 'ca-')), 'ca.crt');
    await writeFile(ca, Buffer.from(c['certificate-authority-data'], 'base64'));
  }
  return { server: c.server, ca };
}

// Only server and CA from the administrator's kubeconfig: with a client certificate present the
// API server would authenticate the certificate, not the token.
async function tokenFlags(cluster: ClusterAccess, token: string): Promise<string[]> {
  const { server, ca } = await clusterEndpoint(cluster);
  return ['--kubeconfig', '/dev/null', '--server', server, '--certificate-authority', ca, '--token', token];
}

/**
 * A kubeconfig holding only the cluster's address and CA and a ServiceAccount token (only those:
 * with a client certificate present the API server would authenticate the certificate instead).
 */
export async function serviceAccountKubeconfig(
  cluster: ClusterAccess,
  serviceAccount = 'website-operator',
  namespace = OPERATOR_NS,
): Promise<string> {
  const { server, ca } = await clusterEndpoint(cluster);
  const token = (
    await kubectlOk(cluster, ['create', 'token', serviceAccount, '-n', namespace, '--duration=2h'])
  ).trim();
  const path = join(await mkdtemp(join(tmpdir(), 'operator-')), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cluster', cluster: { server, 'certificate-authority': ca } }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'cluster', context: { cluster: 'cluster', user: serviceAccount, namespace } }],
    'current-context': 'cluster',
  };
  await writeFile(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}
