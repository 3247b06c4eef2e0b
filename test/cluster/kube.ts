import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../../lib/security.ts';
import { KUBECONFIG, KUBECTL } from './env.ts';

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  /** Standard input, for example a manifest for `apply -f -`. */
  input?: string;
  /** Authenticate with this bearer token instead of the admin certificate. */
  token?: string;
}

/** Runs the real kubectl against the test cluster; never throws on a non-zero exit. */
export function kubectl(args: readonly string[], options: KubectlOptions = {}): Promise<Result> {
  const auth = options.token ? tokenFlags(options.token) : ['--kubeconfig', KUBECONFIG];
  return new Promise((resolve) => {
    const child = execFile(KUBECTL, [...auth, ...args], { maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}

/** Like kubectl(), but fails the test with kubectl's own message when the command fails. */
export async function ok(args: readonly string[], options: KubectlOptions = {}): Promise<string> {
  const result = await kubectl(args, options);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.code}): ${result.stderr}`);
  return result.stdout;
}

/** kubectl get -o json, parsed. */
export async function getJson(args: readonly string[], options: KubectlOptions = {}): Promise<any> {
  return JSON.parse(await ok(['get', ...args, '-o', 'json'], options));
}

let cluster: { server: string; ca: string } | undefined;

// Only server and CA from the admin kubeconfig: with a client certificate present the API server
// would authenticate the certificate, not the token.
function tokenFlags(token: string): string[] {
  if (!cluster) throw new Error('call loadClusterInfo() before using a token');
  return ['--kubeconfig', '/dev/null', '--server', cluster.server, '--certificate-authority', cluster.ca, '--token', token];
}

export async function loadClusterInfo(): Promise<{ server: string; ca: string }> {
  if (!cluster) {
    const config = JSON.parse(await ok(['config', 'view', '--raw', '--minify', '-o', 'json']));
    const c = config.clusters[0].cluster;
    const ca = c['certificate-authority'] ?? (await writeCa(c['certificate-authority-data']));
    cluster = { server: c.server, ca };
  }
  return cluster;
}

async function writeCa(data: string): Promise<string> {
  const path = join(await mkdtemp(join(tmpdir(), 'ca-')), 'ca.crt');
  await writeFile(path, Buffer.from(data, 'base64'));
  return path;
}

/** A fresh namespace for one test file, and its removal. */
export async function createNamespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'website-stack/test': 'true', ...labels } } }),
  });
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  await kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found']);
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A v1 Website manifest. */
export function website(name: string, namespace: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { apiVersion: 'web.example.com/v1', kind: 'Website', metadata: { name, namespace, ...extra }, spec };
}

/** A Deployment `website-<instance>` like the operator's children, Pod Security restricted; `metadata` is merged in. */
export function testDeployment(instance: string, namespace: string, metadata: Record<string, unknown> = {}) {
  const labels = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': instance };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `website-${instance}`, namespace, labels, ...metadata },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: restrictedPodSecurityContext(),
          containers: [{ name: 'web', image: 'nginxinc/nginx-unprivileged:1.28.0-alpine', securityContext: restrictedContainerSecurityContext() }],
        },
      },
    },
  };
}
