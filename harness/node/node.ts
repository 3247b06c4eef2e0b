// What the node project's suites share: dist/ folders as users apply them, pods awaited Ready on
// the real node, and a client pod outside the package to probe NetworkPolicies from.
import { join } from 'node:path';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../../lib/security.ts';
import { NODE_CLUSTER, ROOT } from '../cluster/env.ts';
import { commandsFor } from '../cluster/kube.ts';
import type { ClusterAccess } from '../cluster/kubectl.ts';
import { eventually } from '../process/poll.ts';

/** The real node's name. */
export const NODE = 'real-node';
/** The shell operator's image (dist/website-shell-operator/): bash, kubectl and jq. The client pods run it. */
export const CLIENT_IMAGE = 'alpine/k8s:1.36.2';
export const dist = (folder: string) => join(ROOT, 'dist', folder);

/**
 * The helpers below against `cluster`: the node project's, or the one a walkthrough's reader starts
 * in their clone (test/node-walkthroughs/).
 */
export function nodeCommands(cluster: ClusterAccess) {
  const { kubectl, ok, getJson } = commandsFor(cluster);

  /** Waits for every pod matching `selector` in `namespace` to be Ready on the real node, `count` of them. */
  async function readyPods(namespace: string, selector: string, count: number, timeoutMs = 180_000): Promise<any[]> {
    return eventually(
      `${count} Ready pods ${selector} in ${namespace}`,
      async () => {
        const pods = (await getJson(['pods', '-n', namespace, '-l', selector])).items.filter(
          (p: any) => !p.metadata.deletionTimestamp,
        );
        const ready = pods.filter((p: any) =>
          p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'),
        );
        return pods.length === count && ready.length === count ? ready : undefined;
      },
      {
        timeoutMs,
        progress: () => 'see `kubectl describe pods` in the cluster kept with KEEP_CLUSTER=1',
      },
    );
  }

  /** `script` run by bash in a container of the pod. */
  function exec(namespace: string, pod: string, script: string, container?: string): Promise<string> {
    return ok(['exec', '-n', namespace, pod, ...(container ? ['-c', container] : []), '--', 'bash', '-c', script]);
  }

  /**
   * Whether a TCP connection from the pod (its image has bash) to `host:port` opens within 5 s. A
   * NetworkPolicy's refusal is a dropped or rejected SYN: either way no connection.
   */
  async function connects(namespace: string, pod: string, host: string, port: number): Promise<boolean> {
    const out = await exec(
      namespace,
      pod,
      `if timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/dev/null; then echo open; else echo closed; fi`,
    );
    return out.trim() === 'open';
  }

  /** An HTTP/1.0 GET from inside the pod (bash's /dev/tcp; the images have no curl): the whole response. */
  function httpGet(namespace: string, pod: string, host: string, port: number, path = '/'): Promise<string> {
    return exec(
      namespace,
      pod,
      `exec 3<>/dev/tcp/${host}/${port} && printf 'GET ${path} HTTP/1.0\\r\\nHost: ${host}\\r\\n\\r\\n' >&3 && timeout 10 cat <&3`,
    );
  }

  const clusterIP = async (namespace: string, service: string): Promise<string> =>
    (await getJson(['service', service, '-n', namespace])).spec.clusterIP;

  /** A pod outside the package, in a namespace of its own, that stays up for commands run in it. */
  async function startClient(namespace: string): Promise<string> {
    await ok(['create', 'namespace', namespace]);
    await ok(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=restricted']);
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'client', namespace, labels: { app: 'client' } },
        spec: {
          securityContext: restrictedPodSecurityContext(),
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'client',
              image: CLIENT_IMAGE,
              imagePullPolicy: 'Never',
              command: ['sleep', 'infinity'],
              securityContext: restrictedContainerSecurityContext(),
              resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '64Mi' } },
            },
          ],
        },
      }),
    });
    await readyPods(namespace, 'app=client', 1);
    return 'client';
  }

  return { kubectl, ok, getJson, readyPods, exec, connects, httpGet, clusterIP, startClient };
}

/** The helpers against the node project's cluster (test/node/), and each of them by name. */
export const nodeProject = nodeCommands(NODE_CLUSTER);
export const { kubectl, ok, getJson, readyPods, exec, connects, httpGet, clusterIP, startClient } = nodeProject;
