import { createHash } from 'node:crypto';
import type { KubeObject } from './kube-client.ts';

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
  if (desired === null || typeof desired !== 'object') return desired === actual;
  if (Array.isArray(desired)) {
    return Array.isArray(actual) && actual.length === desired.length && desired.every((item, i) => isSubset(item, actual[i]));
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  return Object.entries(desired).every(([key, value]) => value === undefined || isSubset(value, (actual as Record<string, unknown>)[key]));
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
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]));
  };
  return createHash('sha256').update(JSON.stringify(canonical(object))).digest('hex').slice(0, 16);
}

/** `desired` with annotation `hashAnnotation` set to the hash of the rest of it. */
export function withHash<T extends KubeObject>(desired: T, hashAnnotation: string): T {
  const metadata = desired.metadata ?? {};
  return { ...desired, metadata: { ...metadata, annotations: { ...metadata.annotations, [hashAnnotation]: objectHash(desired) } } };
}

/** True when applying `desired` (already carrying its hash) could change `actual`. */
export function needsApply(desired: KubeObject, actual: KubeObject | undefined): boolean {
  return !actual || !isSubset(desired, actual);
}
