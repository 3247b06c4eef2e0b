import { createHash } from 'node:crypto';
import type { KubeObject } from './kube-api.ts';

/**
 * Deciding whether a server-side apply would change anything, without sending it. `desired` is
 * what we apply; `actual` is the object as stored (with server defaults and other managers'
 * fields). Nothing changes when every field we set already has our value, and what we set is the
 * same as last time: a field we stopped setting is only removed by an apply, which a subset check
 * cannot see, so the desired object carries a hash of itself (an annotation) and a changed hash
 * means apply. Lists must match element for element: the API server does not add list items to
 * the objects the operator renders.
 */

export function isSubset(desired: unknown, actual: unknown): boolean {
  return firstDifference(desired, actual) === undefined;
}

/** Path of the first field of `desired` that `actual` does not have (e.g. `.spec.replicas`), or undefined. */
export function firstDifference(desired: unknown, actual: unknown, path = ''): string | undefined {
  if (desired === null || typeof desired !== 'object') return desired === actual ? undefined : path || '.';
  if (Array.isArray(desired)) {
    if (!Array.isArray(actual) || actual.length !== desired.length) return path || '.';
    for (let i = 0; i < desired.length; i++) {
      const difference = firstDifference(desired[i], actual[i], `${path}[${i}]`);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return path || '.';
  for (const [key, value] of Object.entries(desired)) {
    if (value === undefined) continue;
    const difference = firstDifference(value, (actual as Record<string, unknown>)[key], `${path}.${key}`);
    if (difference !== undefined) return difference;
  }
  return undefined;
}

/** Deep equality of JSON values, ignoring key order (the API server returns keys sorted). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return isSubset(a, b) && isSubset(b, a);
}

/** sha256 of an object's canonical JSON (keys sorted), first 16 hex characters. */
export function objectHash(object: unknown): string {
  const canonical = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(canonical);
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(object)))
    .digest('hex')
    .slice(0, 16);
}

/** `desired` with annotation `hashAnnotation` set to the hash of the rest of it. */
export function withHash<T extends KubeObject>(desired: T, hashAnnotation: string): T {
  const metadata = desired.metadata ?? {};
  return {
    ...desired,
    metadata: { ...metadata, annotations: { ...metadata.annotations, [hashAnnotation]: objectHash(desired) } },
  };
}

/** True when applying `desired` (already carrying its hash) could change `actual`. */
export function needsApply(desired: KubeObject, actual: KubeObject | undefined): boolean {
  return !actual || !isSubset(desired, actual);
}
