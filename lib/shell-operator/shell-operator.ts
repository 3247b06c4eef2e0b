import { createHash } from 'node:crypto';
import { App, Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { SHELL_OPERATOR_SCRIPT } from '../../imports/shell-operator-script.ts';
import { lintAnnotations, singlePodLintExemptions, WORKLOAD_LINT_EXEMPTIONS } from '../lint.ts';
import { OPERATOR_NAMESPACE } from '../operator/names.ts';
import type { OperatorResources } from '../operator/operator-deployment.ts';
import { type ApiServerPeers, OperatorNetworkPolicy } from '../operator/operator-network-policy.ts';
import { optionalFeature } from '../props.ts';
import {
  RESTRICTED_NAMESPACE_LABELS,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
} from '../security.ts';
import { DEFAULT_COLOR, DEFAULT_GROUP, WORKLOAD_PREFIX } from '../website/schema.ts';
import { linearChannel, pageHtml } from '../workload/page.ts';
import { type WebsiteGateway, websiteGatewayProblems } from '../workload/website-route.ts';
import { WebsiteWorkload, websiteOwns } from '../workload/website-workload.ts';

/** Name of the shell operator's ServiceAccount, Role, RoleBinding, ConfigMap and Deployment. */
export const SHELL_OPERATOR_NAME = 'website-shell-operator';
/** Field manager of its server-side applies (the real operator's is `website-operator`). */
export const SHELL_OPERATOR_FIELD_MANAGER = 'website-shell-operator';
/** ConfigMap keys, and file names where the pod mounts them. */
export const SHELL_OPERATOR_FILES = {
  script: 'website-shell-operator.sh',
  template: 'children-template.json',
} as const;
/** Where the pod mounts the ConfigMap. */
export const SHELL_OPERATOR_CONFIG_DIR = '/etc/website-shell-operator';

/**
 * alpine/k8s (github.com/alpine-docker/k8s): Alpine with bash and jq from Alpine's packages and the
 * kubectl release its tag names. 1.36.2 is the newest tag confirmed published when this was
 * written, and within kubectl's one-minor version skew of Kubernetes 1.36 (the local cluster runs
 * 1.36.4). The image's default user is root; the pod runs it as uid 65532, which only needs to
 * read the mounted files and execute bash, jq and kubectl (world-executable).
 */
export const DEFAULT_SHELL_OPERATOR_IMAGE = 'alpine/k8s:1.36.2';

/**
 * One bash process spawning kubectl and jq one at a time: a small CPU request, and a memory limit
 * with room for jq holding the Website list of a thousand Websites.
 */
export const DEFAULT_SHELL_OPERATOR_RESOURCES: OperatorResources = {
  cpuRequest: '50m',
  memoryRequest: '64Mi',
  memoryLimit: '256Mi',
};

/** Spec §8: the shell-style operator's poll interval. */
export const DEFAULT_SHELL_OPERATOR_INTERVAL_SECONDS = 10;

/** The deadline the script gives every API call (kubectl --request-timeout). */
export const SHELL_OPERATOR_REQUEST_TIMEOUT_SECONDS = 30;

/** Where the pod's script writes its heartbeat (on the pod's writable /tmp). */
export const SHELL_OPERATOR_HEARTBEAT_FILE = '/tmp/heartbeat';

/**
 * The age after which the heartbeat says the loop is stuck. The script writes the time into the
 * heartbeat file as each cycle starts and after each Website, so a working loop is silent for at
 * most one sleep (`interval`) or one API call (its 30 s deadline, plus kubectl's start). Three
 * intervals plus one deadline leaves room for both: 60 s at the default interval of 10 s.
 */
export function heartbeatMaxAgeSeconds(interval: number): number {
  return 3 * interval + SHELL_OPERATOR_REQUEST_TIMEOUT_SECONDS;
}

/**
 * The liveness and readiness check the kubelet runs in the container: succeeds while the
 * heartbeat file ($HEARTBEAT) holds a time at most $HEARTBEAT_MAX_AGE seconds old. Bash builtins
 * only, so the check neither forks nor depends on the image's date or stat.
 */
export const HEARTBEAT_CHECK: readonly string[] = [
  'bash',
  '-c',
  'read -r beat <"$HEARTBEAT" && [[ $beat =~ ^[0-9]+$ ]] && (( EPOCHSECONDS - beat <= HEARTBEAT_MAX_AGE ))',
];

/**
 * What the script cannot compute itself, rendered by the constructs the real operator uses:
 * children of a placeholder Website, and the page with holes for the Website's fields.
 */
export interface ShellOperatorTemplate {
  /** API group of the Website resource the script lists. */
  readonly group: string;
  /** Prefix of a child's name: `website-<name>`. */
  readonly namePrefix: string;
  /** Colour of a Website without `spec.color`. */
  readonly defaultColor: string;
  /** The page split at its holes: even positions are HTML, odd positions name a field (text, background, foreground). */
  readonly page: string[];
  /** linearChannel(0..255), for the text colour. */
  readonly linearChannel: number[];
  /** WebsiteWorkload's Deployment for the placeholder Website. */
  readonly deployment: Record<string, unknown>;
  /** WebsiteWorkload's Service for the placeholder Website. */
  readonly service: Record<string, unknown>;
  /**
   * With a Gateway only: WebsiteWorkload's HTTPRoute for the placeholder Website (host
   * `placeholder`), and the hosts the script gives: `<name>-<namespace>.<domain>`, or `spec.host`
   * when it lies under one of `hostSuffixes`.
   */
  readonly route?: {
    readonly httpRoute: Record<string, unknown>;
    readonly domain: string;
    readonly hostSuffixes: string[];
  };
}

/** Name, namespace, uid and title of the Website the template is rendered for; the script replaces each. */
export const TEMPLATE_PLACEHOLDER = 'placeholder';

const FIELDS = ['text', 'background', 'foreground'] as const;
const hole = (field: string) => `\u0000${field}\u0000`;

/** The template the script fills in, for Websites of `group` (and routes on `gateway`, when given). */
export function shellOperatorTemplate(group: string = DEFAULT_GROUP, gateway?: WebsiteGateway): ShellOperatorTemplate {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), 'template');
  const p = TEMPLATE_PLACEHOLDER;
  const workload = new WebsiteWorkload(chart, 'workload', {
    group,
    website: {
      apiVersion: `${group}/v1`,
      kind: 'Website',
      metadata: { name: p, namespace: p, uid: p },
      spec: { title: p, replicas: 1, color: DEFAULT_COLOR },
    },
    ...(gateway ? { route: { gateway, host: p } } : {}),
  });
  const page = pageHtml({ text: hole('text'), background: hole('background'), foreground: hole('foreground') });
  return {
    group,
    namePrefix: WORKLOAD_PREFIX,
    defaultColor: DEFAULT_COLOR,
    page: page.split(new RegExp(`\u0000(${FIELDS.join('|')})\u0000`)),
    linearChannel: Array.from({ length: 256 }, (_, byte) => linearChannel(byte)),
    deployment: workload.deployment.toJson(),
    service: workload.service.toJson(),
    ...(gateway && workload.httpRoute
      ? {
          route: {
            httpRoute: workload.httpRoute.toJson(),
            domain: gateway.domain,
            hostSuffixes: [...(gateway.hostSuffixes ?? [])],
          },
        }
      : {}),
  };
}

/** The bash script (lib/shell-operator/website-shell-operator.sh, compiled in by `npm run codegen`). */
export function shellOperatorScript(): string {
  return SHELL_OPERATOR_SCRIPT;
}

/**
 * The Role's rules: exactly what the script does, nothing for status, events or deletion (the
 * garbage collector deletes children through their owner references).
 */
export function shellOperatorRoleRules(group: string = DEFAULT_GROUP, gateway = false): k8s.PolicyRule[] {
  return [
    // list: each cycle reads every Website in one request. It never reads one alone (no get), nor watches.
    { apiGroups: [group], resources: ['websites'], verbs: ['list'] },
    // patch: server-side apply is a PATCH. create: an apply that creates the object is authorized as create too.
    // With a Gateway, each Website's HTTPRoute too.
    ...websiteOwns(gateway).map((owned) => ({
      apiGroups: [owned.group],
      resources: [owned.resource],
      verbs: ['create', 'patch'],
    })),
  ];
}

/** Where the shell operator's NetworkPolicy lets it reach the API server and DNS. */
export interface ShellOperatorNetworkPolicyOptions {
  /** @default any address on ports 443 and 6443 */
  readonly apiServer?: ApiServerPeers;
  /** @default kube-dns in kube-system */
  readonly dns?: k8s.NetworkPolicyPeer[];
}

export interface ShellOperatorProps {
  /**
   * Namespace the shell operator runs in and whose Websites it reconciles: only that one (the
   * baseline stays single-namespace; WebsiteOperator's watchNamespaces covers several, or all).
   * @default 'website-system'
   */
  readonly namespace?: string;
  /**
   * Create the namespace, labelled to enforce Pod Security `restricted`.
   * @default true
   */
  readonly createNamespace?: boolean;
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * Image with bash, jq and kubectl, pinned by tag or digest.
   * @default 'alpine/k8s:1.36.2'
   */
  readonly image?: string;
  /**
   * Seconds the script sleeps between cycles.
   * @default 10 (spec §8)
   */
  readonly intervalSeconds?: number;
  /**
   * CPU and memory requests and limit.
   * @default DEFAULT_SHELL_OPERATOR_RESOURCES
   */
  readonly resources?: OperatorResources;
  /**
   * NetworkPolicies: a default deny for this package's pods in the namespace, and for the shell
   * operator's pod no ingress at all (it serves nothing) and egress only to the API server and
   * DNS: by default any address on ports 443 and 6443, and kube-dns; `networkPolicyOptions` says
   * where the API server and DNS are.
   * @default true
   */
  readonly networkPolicy?: boolean;
  /** Where the API server and DNS of `networkPolicy` are. @default any address on ports 443 and 6443, kube-dns */
  readonly networkPolicyOptions?: ShellOperatorNetworkPolicyOptions;
  /**
   * The platform's Gateway: the script applies an HTTPRoute per Website too, as WebsiteOperator's
   * `gateway` does, for `<name>-<namespace>.<domain>` or the Website's `spec.host` under
   * `hostSuffixes` (another host skips the Website, logged). Unlike the operator it writes no status
   * and keeps no host from a second Website: the Gateway decides between two routes for one host.
   * @default no Gateway: no routes
   */
  readonly gateway?: WebsiteGateway;
}

/**
 * The shell-style operator (spec §4, operator rule 1): a bash + kubectl + jq loop in one pod, with
 * its own ServiceAccount and least-privilege Role, probes that check the loop's heartbeat, and
 * NetworkPolicies. An alternative to WebsiteOperator, never deployed beside it: both would apply
 * every Website's children.
 */
export class ShellOperator extends Construct {
  public readonly namespace: string;
  public readonly serviceAccount: k8s.KubeServiceAccount;
  public readonly role: k8s.KubeRole;
  public readonly roleBinding: k8s.KubeRoleBinding;
  public readonly configMap: k8s.KubeConfigMap;
  public readonly deployment: k8s.KubeDeployment;
  /** Unless `networkPolicy` is false: the default deny and the shell operator's own NetworkPolicy. */
  public readonly networkPolicy?: OperatorNetworkPolicy;

  constructor(scope: Construct, id: string, props: ShellOperatorProps = {}) {
    super(scope, id);
    const where = `ShellOperator at '${this.node.path}'`;
    const interval = props.intervalSeconds ?? DEFAULT_SHELL_OPERATOR_INTERVAL_SECONDS;
    if (!Number.isInteger(interval) || interval < 1) {
      throw new Error(`${where}: intervalSeconds must be a whole number of seconds >= 1, got ${interval}`);
    }
    this.namespace = props.namespace ?? OPERATOR_NAMESPACE;
    const group = props.group ?? DEFAULT_GROUP;
    const gatewayProblems = props.gateway ? websiteGatewayProblems(props.gateway) : [];
    if (gatewayProblems.length > 0) throw new Error(`${where}: gateway ${gatewayProblems.join('; ')}`);
    const networkPolicy = optionalFeature(
      where,
      'networkPolicy',
      props.networkPolicy,
      props.networkPolicyOptions,
      true,
    );
    const resources = props.resources ?? DEFAULT_SHELL_OPERATOR_RESOURCES;
    const labels = {
      'app.kubernetes.io/name': SHELL_OPERATOR_NAME,
      'app.kubernetes.io/instance': SHELL_OPERATOR_NAME,
      'app.kubernetes.io/component': 'controller',
      'app.kubernetes.io/part-of': 'website-stack',
    };
    const metadata = { name: SHELL_OPERATOR_NAME, namespace: this.namespace, labels };

    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: { name: this.namespace, labels: { ...RESTRICTED_NAMESPACE_LABELS } },
      });
    }
    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata });
    this.role = new k8s.KubeRole(this, 'Role', {
      metadata,
      rules: shellOperatorRoleRules(group, props.gateway !== undefined),
    });
    this.roleBinding = new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: SHELL_OPERATOR_NAME },
      subjects: [{ kind: 'ServiceAccount', name: SHELL_OPERATOR_NAME, namespace: this.namespace }],
    });

    const data = {
      [SHELL_OPERATOR_FILES.script]: shellOperatorScript(),
      [SHELL_OPERATOR_FILES.template]: `${JSON.stringify(shellOperatorTemplate(group, props.gateway), null, 2)}\n`,
    };
    this.configMap = new k8s.KubeConfigMap(this, 'ConfigMap', { metadata, data });

    const q = k8s.Quantity.fromString;
    const selector = { 'app.kubernetes.io/name': SHELL_OPERATOR_NAME, 'app.kubernetes.io/component': 'controller' };
    // Liveness: restart a loop that stopped writing its heartbeat (stuck, or stopped). Readiness:
    // the same check, so the Deployment is available (kubectl rollout status, Argo CD's health)
    // once the loop runs. Every 10 s; three failures in a row count.
    const heartbeat: k8s.Probe = {
      exec: { command: [...HEARTBEAT_CHECK] },
      periodSeconds: 10,
      failureThreshold: 3,
      timeoutSeconds: 5,
    };
    const lint = [
      ...WORKLOAD_LINT_EXEMPTIONS,
      {
        polaris: 'automountServiceAccountToken',
        reason:
          'The script calls the API server (kubectl) as its ServiceAccount: the token is what it authenticates with.',
      },
      ...singlePodLintExemptions(
        'One loop: a second would apply every Website again, doubling the API load for nothing.',
      ),
      ...(networkPolicy === undefined
        ? []
        : [
            {
              polaris: 'missingNetworkPolicy',
              reason:
                'Its NetworkPolicy has no ingress rule on purpose: the pod serves nothing, so no traffic may reach it.',
            },
          ]),
    ];
    this.deployment = new k8s.KubeDeployment(this, 'Deployment', {
      metadata: { ...metadata, annotations: lintAnnotations(lint) },
      spec: {
        // One loop: a second would apply every Website again, doubling the API load for nothing.
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: {
            labels,
            // bash reads the script once at start: a changed ConfigMap must restart the pod.
            annotations: {
              'website-stack/config-sha256': createHash('sha256').update(JSON.stringify(data)).digest('hex'),
            },
          },
          spec: {
            serviceAccountName: SHELL_OPERATOR_NAME,
            automountServiceAccountToken: true,
            enableServiceLinks: false,
            securityContext: restrictedPodSecurityContext(),
            containers: [
              {
                name: 'operator',
                image: props.image ?? DEFAULT_SHELL_OPERATOR_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                command: ['bash', `${SHELL_OPERATOR_CONFIG_DIR}/${SHELL_OPERATOR_FILES.script}`],
                env: [
                  { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  { name: 'TEMPLATE', value: `${SHELL_OPERATOR_CONFIG_DIR}/${SHELL_OPERATOR_FILES.template}` },
                  { name: 'INTERVAL', value: String(interval) },
                  { name: 'FIELD_MANAGER', value: SHELL_OPERATOR_FIELD_MANAGER },
                  // kubectl's discovery cache and the script's scratch files: the root is read-only.
                  { name: 'HOME', value: '/tmp' },
                  { name: 'HEARTBEAT', value: SHELL_OPERATOR_HEARTBEAT_FILE },
                  { name: 'HEARTBEAT_MAX_AGE', value: String(heartbeatMaxAgeSeconds(interval)) },
                ],
                livenessProbe: heartbeat,
                readinessProbe: heartbeat,
                resources: {
                  requests: { cpu: q(resources.cpuRequest), memory: q(resources.memoryRequest) },
                  limits: { memory: q(resources.memoryLimit) },
                },
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: [
                  { name: 'config', mountPath: SHELL_OPERATOR_CONFIG_DIR, readOnly: true },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'config', configMap: { name: SHELL_OPERATOR_NAME } },
              { name: 'tmp', emptyDir: { sizeLimit: q('64Mi') } },
            ],
          },
        },
      },
    });
    if (networkPolicy) {
      this.networkPolicy = new OperatorNetworkPolicy(this, 'NetworkPolicy', {
        ...networkPolicy,
        namespace: this.namespace,
        name: SHELL_OPERATOR_NAME,
        labels,
        podSelector: { 'app.kubernetes.io/name': SHELL_OPERATOR_NAME },
      });
    }
  }
}
