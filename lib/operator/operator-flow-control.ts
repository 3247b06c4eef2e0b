import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { operatorLabels } from './names.ts';

/**
 * How the priority level queues the operator's requests while all its seats are busy. The
 * API server rejects a request with 429 only when its queue is full or it waited too long.
 */
export interface OperatorFlowControlQueuing {
  /**
   * Queues of the priority level. One, because the FlowSchema sends it a single flow (one
   * ServiceAccount, distinguished ByUser): more queues serve to keep flows apart (shuffle
   * sharding), and there is only one.
   * @default 1
   */
  readonly queues?: number;
  /**
   * Queues dealt to each flow (shuffle sharding), at most `queues`.
   * @default 1
   */
  readonly handSize?: number;
  /**
   * Requests that may wait in one queue. Each of the operator's workers has at most three writes
   * outstanding (a new Website's finalizer and both children go out together), so its default 32
   * workers have up to about 100, plus leader election, Events (4 at a time) and informer lists:
   * 128 lets a burst wait for a seat rather than be rejected, while a runaway client still meets
   * 429 and backs off.
   * @default 128
   */
  readonly queueLengthLimit?: number;
}

/** What can be tuned of OperatorFlowControl; `WebsiteOperator`'s `flowControl` takes these. */
export interface OperatorFlowControlOptions {
  /**
   * Name of the FlowSchema and of the PriorityLevelConfiguration. Both are cluster-scoped, so the
   * default carries the namespace: two installations of the operator never collide.
   * @default '<serviceAccount.name>-<serviceAccount.namespace>', e.g. 'website-operator-website-system'
   */
  readonly name?: string;
  /**
   * The FlowSchema's matchingPrecedence: the API server classifies a request by the matching
   * FlowSchema with the lowest value. 1000 comes after every built-in schema for the control
   * plane (`exempt` 1, `probes` 2, `system-leader-election` 100, ... `kube-system-service-accounts`
   * 900) and before `service-accounts` (9000), which would otherwise take the operator's requests
   * into the `workload-low` level shared by every ServiceAccount. Must be below 9000.
   * @default 1000
   */
  readonly matchingPrecedence?: number;
  /**
   * The priority level's share of the API server's concurrency limit (ServerCL, by default
   * `--max-requests-inflight` 400 + `--max-mutating-requests-inflight` 200 = 600 seats), divided in
   * proportion to the shares of all levels (245 for the built-in ones). 10, like the built-in
   * `leader-election` level, gives ceil(600 * 10 / 255) = 24 seats: room for the operator's 4
   * workers, its Lease renewals and Events, and its informers' relists at once (a LIST of many
   * objects occupies several seats, at most 15% of the level's: 4 here), while taking only 4% from
   * every other level.
   * @default 10
   */
  readonly nominalConcurrencyShares?: number;
  /**
   * Percentage of the level's seats other levels may borrow while the operator does not use them.
   * A level-triggered operator is mostly idle between bursts (changes, resyncs), so it lends half;
   * the other half (12 seats of 24) stays guaranteed, enough for its workers and a relist to start
   * at once. The level has no borrowing limit: it may borrow what other levels lend.
   * @default 50
   */
  readonly lendablePercent?: number;
  /**
   * Queuing of requests that find every seat of the level busy.
   * @default 1 queue, hand size 1, 50 requests per queue
   */
  readonly queuing?: OperatorFlowControlQueuing;
}

/** A ServiceAccount, by name and namespace. */
export interface ServiceAccountRef {
  readonly name: string;
  readonly namespace: string;
}

export interface OperatorFlowControlProps extends OperatorFlowControlOptions {
  /** The operator's ServiceAccount: every request it makes is classified into the priority level. */
  readonly serviceAccount: ServiceAccountRef;
}

/** The built-in FlowSchema that classifies every ServiceAccount's requests (into `workload-low`). */
const SERVICE_ACCOUNTS_PRECEDENCE = 9000;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The API server's own fairness for the operator (API Priority and Fairness,
 * `flowcontrol.apiserver.k8s.io/v1`, Kubernetes 1.29 or later): a PriorityLevelConfiguration of its
 * own, and a FlowSchema putting every request of the operator's ServiceAccount into it. Without
 * them the operator shares the `workload-low` level with every other ServiceAccount; with them it
 * has seats nobody else can take and cannot take more than its level's (plus what others lend).
 * The operator sets no client-side rate limit unless KUBE_API_QPS is set, so this is where its
 * request rate is governed.
 *
 * Both objects are cluster-scoped, and change how the whole API server divides its seats: so the
 * construct is optional (`WebsiteOperator`'s `flowControl`), and dist/ does not ship it. Until the
 * priority level exists the API server ignores the FlowSchema (condition `Dangling`), so applying
 * both in either order is safe.
 */
export class OperatorFlowControl extends Construct {
  public readonly priorityLevel: k8s.KubePriorityLevelConfiguration;
  public readonly flowSchema: ApiObject;

  constructor(scope: Construct, id: string, props: OperatorFlowControlProps) {
    super(scope, id);
    const where = `OperatorFlowControl at '${this.node.path}'`;
    const { serviceAccount } = props;
    const name = props.name ?? `${serviceAccount.name}-${serviceAccount.namespace}`;
    const matchingPrecedence = props.matchingPrecedence ?? 1000;
    const nominalConcurrencyShares = props.nominalConcurrencyShares ?? 10;
    const lendablePercent = props.lendablePercent ?? 50;
    const queues = props.queuing?.queues ?? 1;
    const handSize = props.queuing?.handSize ?? 1;
    const queueLengthLimit = props.queuing?.queueLengthLimit ?? 128;

    const problems: string[] = [];
    const integer = (field: string, value: number, min: number, max: number, why: string) => {
      if (!Number.isInteger(value) || value < min || value > max)
        problems.push(`${field} must be a whole number from ${min} to ${max} (${why}), got ${value}`);
    };
    if (!serviceAccount.name || !serviceAccount.namespace)
      problems.push('serviceAccount needs both name and namespace');
    if (name.length > 253 || !DNS_SUBDOMAIN.test(name))
      problems.push(
        `name must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253 characters), got '${name}'`,
      );
    integer(
      'matchingPrecedence',
      matchingPrecedence,
      2,
      SERVICE_ACCOUNTS_PRECEDENCE - 1,
      `1 is reserved for 'exempt', and from ${SERVICE_ACCOUNTS_PRECEDENCE} on the built-in 'service-accounts' schema matches first`,
    );
    integer(
      'nominalConcurrencyShares',
      nominalConcurrencyShares,
      1,
      2 ** 31 - 1,
      '0 would leave the operator only borrowed seats',
    );
    integer('lendablePercent', lendablePercent, 0, 100, 'a percentage');
    integer('queuing.queues', queues, 1, 10_000_000, 'the API server allows up to 10^7');
    integer('queuing.handSize', handSize, 1, queues, 'at most queues');
    integer('queuing.queueLengthLimit', queueLengthLimit, 1, 2 ** 31 - 1, 'a positive number');
    // The API server's shuffle-sharding limit: dealing handSize of queues may use 60 bits of hash.
    if (problems.length === 0 && Math.ceil(Math.log2(queues) * handSize) > 60) {
      problems.push(
        `queuing.handSize ${handSize} is too large for ${queues} queues: ceil(log2(queues) * handSize) must be at most 60`,
      );
    }
    if (problems.length > 0) throw new Error(`${where}: ${problems.join('; ')}`);

    const metadata = { name, labels: operatorLabels('flow-control') };
    // Every field written out, none left to the API server's defaults, so that a GitOps diff
    // (Argo CD) sees the stored object exactly as synthesized.
    this.priorityLevel = new k8s.KubePriorityLevelConfiguration(this, 'PriorityLevel', {
      metadata,
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares,
          lendablePercent,
          limitResponse: { type: 'Queue', queuing: { queues, handSize, queueLengthLimit } },
        },
      },
    });
    // A plain ApiObject: cdk8s-plus-34's KubeFlowSchema types its subjects as RBAC Subjects (the
    // generated code merges the two Subject types) and drops `serviceAccount` when rendering.
    this.flowSchema = new ApiObject(this, 'FlowSchema', {
      ...k8s.KubeFlowSchema.GVK,
      metadata,
      spec: {
        priorityLevelConfiguration: { name },
        matchingPrecedence,
        // ByUser: one ServiceAccount is one user, so all the operator's requests (leader and
        // followers alike) form one flow, served in arrival order; it is also what the built-in
        // service-accounts schema uses, so moving the operator here changes which seats it gets,
        // not how its requests are ordered. ByNamespace would only split off its few
        // cluster-scoped requests (the Website CRD's caBundle) into a flow of their own.
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [
              {
                kind: 'ServiceAccount',
                serviceAccount: { name: serviceAccount.name, namespace: serviceAccount.namespace },
              },
            ],
            // Everything the ServiceAccount asks, as the built-in service-accounts schema matches it.
            resourceRules: [
              { verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true },
            ],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          },
        ],
      },
    });
    // Both are cluster-scoped: a namespace cdk8s takes from a namespaced chart would be wrong on them.
    if (Chart.of(this).namespace !== undefined) {
      for (const object of [this.priorityLevel, this.flowSchema])
        object.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
    }
  }
}
