/**
 * Pure conversion between the Website versions (spec §9). v1beta1 `heading`, `instances` and
 * `theme.color` are v1 `title`, `replicas` and `color`; `host` is `host` in both. Metadata is carried untouched, status as is,
 * and the colour default is added on the way to v1, so round trips of valid objects are lossless.
 */
import { DEFAULT_COLOR, DEFAULT_GROUP } from './schema.ts';
import type { AnyWebsite, WebsiteV1, WebsiteV1beta1 } from './types.ts';

/** A conversion request the webhook must answer with a Failed result, never a crash. */
export class ConversionError extends Error {
  override readonly name = 'ConversionError';
}

export function v1beta1ToV1(object: WebsiteV1beta1, group: string = DEFAULT_GROUP): WebsiteV1 {
  const { heading, instances, theme, host } = object.spec;
  return {
    ...object,
    apiVersion: `${group}/v1`,
    spec: {
      title: heading,
      replicas: instances,
      color: theme?.color ?? DEFAULT_COLOR,
      ...(host === undefined ? {} : { host }),
    },
  };
}

export function v1ToV1beta1(object: WebsiteV1, group: string = DEFAULT_GROUP): WebsiteV1beta1 {
  const { title, replicas, color, host } = object.spec;
  return {
    ...object,
    apiVersion: `${group}/v1beta1`,
    spec: {
      heading: title,
      instances: replicas,
      theme: { color: color ?? DEFAULT_COLOR },
      ...(host === undefined ? {} : { host }),
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Converts any Website object to `desiredAPIVersion` (`<group>/v1` or `<group>/v1beta1`), as the
 * API server asks in a ConversionReview. Throws ConversionError with a message for the user when
 * the object is not a Website of `group` or lacks the fields conversion needs.
 */
export function convertWebsite(object: unknown, desiredAPIVersion: string, group: string = DEFAULT_GROUP): AnyWebsite {
  if (!isRecord(object)) throw new ConversionError('object is not a JSON object');
  const { apiVersion, kind, spec } = object;
  const name =
    isRecord(object.metadata) && typeof object.metadata.name === 'string' ? ` '${object.metadata.name}'` : '';
  if (kind !== 'Website') throw new ConversionError(`object${name} has kind '${String(kind)}', expected 'Website'`);
  const from = versionOf(apiVersion, group, `object${name} has apiVersion '${String(apiVersion)}'`);
  const to = versionOf(desiredAPIVersion, group, `desiredAPIVersion '${desiredAPIVersion}'`);
  if (!isRecord(spec)) throw new ConversionError(`Website${name} has no spec`);

  if (from === to) return object as unknown as AnyWebsite;
  if (from === 'v1beta1') {
    if (typeof spec.heading !== 'string' || typeof spec.instances !== 'number') {
      throw new ConversionError(`v1beta1 Website${name} needs spec.heading (string) and spec.instances (integer)`);
    }
    return v1beta1ToV1(object as unknown as WebsiteV1beta1, group);
  }
  if (typeof spec.title !== 'string' || typeof spec.replicas !== 'number') {
    throw new ConversionError(`v1 Website${name} needs spec.title (string) and spec.replicas (integer)`);
  }
  return v1ToV1beta1(object as unknown as WebsiteV1, group);
}

function versionOf(apiVersion: unknown, group: string, what: string): 'v1' | 'v1beta1' {
  if (apiVersion === `${group}/v1`) return 'v1';
  if (apiVersion === `${group}/v1beta1`) return 'v1beta1';
  throw new ConversionError(`${what}: expected ${group}/v1 or ${group}/v1beta1`);
}
