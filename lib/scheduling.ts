import type { k8s } from 'cdk8s-plus-34';
import { assertOneOf } from './props.ts';

/**
 * How the replicas of a Deployment spread over the cluster, so that losing one node (or zone)
 * takes down as few of them as possible.
 */
export interface ReplicaSpread {
  /**
   * Replicas avoid sharing a node (inter-pod anti-affinity on `kubernetes.io/hostname`):
   * - `preferred`: the scheduler puts a replica on a node without one when it can, and beside
   *   another when it cannot (fewer nodes than replicas, the others full);
   * - `required`: at most one replica per node; replicas beyond the number of fitting nodes stay
   *   Pending, and so do rollouts' surge pods on a cluster of as many nodes as replicas.
   * @default 'preferred'
   */
  readonly acrossNodes?: 'preferred' | 'required';
  /**
   * Replicas spread evenly over zones (a topology spread constraint on
   * `topology.kubernetes.io/zone`, at most 1 more in one zone than in another):
   * - `preferred` (`ScheduleAnyway`): a goal the scheduler scores, never a reason to stay Pending;
   *   on nodes without zone labels it has no effect;
   * - `required` (`DoNotSchedule`): a replica stays Pending rather than unbalance the zones, and
   *   only nodes with a zone label are eligible.
   * @default 'preferred'
   */
  readonly acrossZones?: 'preferred' | 'required';
}

/** Both kept soft: spreading is a goal, never a reason for a replica to stay Pending. */
export const DEFAULT_REPLICA_SPREAD: Required<ReplicaSpread> = { acrossNodes: 'preferred', acrossZones: 'preferred' };

const HOSTNAME = 'kubernetes.io/hostname';
const ZONE = 'topology.kubernetes.io/zone';

/**
 * The pod spec fields that spread the replicas selected by `selector` (the Deployment's own
 * selector, so other workloads' pods never count). `pod-template-hash` keeps a rollout's new pods
 * from being placed against the old ReplicaSet's, which are about to go.
 */
export function replicaSpread(
  selector: Record<string, string>,
  spread: ReplicaSpread = {},
): Pick<k8s.PodSpec, 'affinity' | 'topologySpreadConstraints'> {
  for (const key of ['acrossNodes', 'acrossZones'] as const)
    assertOneOf('spread', key, spread[key], ['preferred', 'required']);
  const { acrossNodes, acrossZones } = { ...DEFAULT_REPLICA_SPREAD, ...spread };
  const term: k8s.PodAffinityTerm = {
    labelSelector: { matchLabels: { ...selector } },
    matchLabelKeys: ['pod-template-hash'],
    topologyKey: HOSTNAME,
  };
  return {
    affinity: {
      podAntiAffinity:
        acrossNodes === 'required'
          ? { requiredDuringSchedulingIgnoredDuringExecution: [term] }
          : { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }] },
    },
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: ZONE,
        whenUnsatisfiable: acrossZones === 'required' ? 'DoNotSchedule' : 'ScheduleAnyway',
        labelSelector: { matchLabels: { ...selector } },
        matchLabelKeys: ['pod-template-hash'],
      },
    ],
  };
}
