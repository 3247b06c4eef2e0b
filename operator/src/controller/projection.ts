import type { KubeObject } from './kube-api.ts';

/**
 * Cached objects cut down to the fields the operator reads: client-go's TransformFunc,
 * controller-runtime's cache transforms. A Deployment as the API server returns it is mostly what
 * the operator never reads (defaults of every container and probe field, the rollout's conditions);
 * holding thousands of them whole is most of the operator's heap.
 *
 * What is kept is a mask: the paths of objects the operator writes (its rendered children, whose
 * every field drift detection compares), plus the metadata and status fields it reads. A list is
 * kept whole in length, each element cut by the union of the mask's elements: drift detection
 * compares lists element for element, so an element someone added must stay visible.
 */

/** `true`: keep the whole value. An object: keep those keys, each by its mask. */
export type FieldMask = true | { readonly [key: string]: FieldMask };

/** The union of two masks. */
function union(a: FieldMask, b: FieldMask): FieldMask {
  if (a === true || b === true) return true;
  const merged: Record<string, FieldMask> = { ...a };
  for (const [key, mask] of Object.entries(b)) merged[key] = key in merged ? union(merged[key], mask) : mask;
  return merged;
}

/** The mask of every path `value` has: objects by key, lists by the union of their elements. */
export function maskOf(value: unknown): FieldMask {
  if (Array.isArray(value)) return value.map(maskOf).reduce<FieldMask>((a, b) => union(a, b), {});
  if (value === null || typeof value !== 'object') return true;
  return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, maskOf(v)]));
}

/** The union of the masks of `values` and of `extra` masks. */
export function fieldMask(values: readonly unknown[], ...extra: FieldMask[]): FieldMask {
  return [...values.map(maskOf), ...extra].reduce<FieldMask>((a, b) => union(a, b), {});
}

/**
 * `value` cut to `mask`. Where the value is not the shape the mask expects (a list where an object
 * was, a scalar where an object was), it is kept whole: a difference drift detection must see.
 */
export function project(value: unknown, mask: FieldMask): unknown {
  if (mask === true || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((element) => project(element, mask));
  const kept: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(mask))
    if ((value as Record<string, unknown>)[key] !== undefined)
      kept[key] = project((value as Record<string, unknown>)[key], inner);
  return kept;
}

/**
 * The metadata every cached object keeps whole or by name: identity and versions for requests and
 * preconditions, owner references for ownership and adoption, labels and annotations (drift
 * detection compares ours, the hash annotation among them), deletion for finalizers.
 */
export const METADATA_MASK: FieldMask = {
  metadata: {
    name: true,
    namespace: true,
    uid: true,
    resourceVersion: true,
    generation: true,
    creationTimestamp: true,
    deletionTimestamp: true,
    labels: true,
    annotations: true,
    ownerReferences: true,
    finalizers: true,
  },
};

/** An informer transform keeping `mask` of each object (apiVersion and kind too). */
export function projection<T extends KubeObject>(mask: FieldMask): (object: T) => T {
  const full = union(mask, { apiVersion: true, kind: true });
  return (object) => project(object, full) as T;
}
