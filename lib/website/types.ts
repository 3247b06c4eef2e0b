import type { WebsiteStatus } from '../../imports/website-status.ts';
import type { WebsiteSpec } from '../../imports/website-v1.ts';
import type { WebsiteV1Beta1Spec } from '../../imports/website-v1beta1.ts';

export type { WebsiteCondition, WebsiteStatus } from '../../imports/website-status.ts';
export type { WebsiteSpec } from '../../imports/website-v1.ts';
export type { WebsiteV1Beta1Spec, WebsiteV1Beta1Theme } from '../../imports/website-v1beta1.ts';

/**
 * Object metadata as the API server returns it, the fields read by name; conversion carries it
 * through untouched, and the operator's client types every object's metadata with it.
 */
export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

/** An entry of `metadata.ownerReferences`: `controller` marks the one owner that manages the object. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A Website in the storage version, v1. */
export interface WebsiteV1 {
  apiVersion: string;
  kind: 'Website';
  metadata: ObjectMeta;
  spec: WebsiteSpec;
  status?: WebsiteStatus;
}

/** A Website in the served, deprecated version v1beta1. */
export interface WebsiteV1beta1 {
  apiVersion: string;
  kind: 'Website';
  metadata: ObjectMeta;
  spec: WebsiteV1Beta1Spec;
  status?: WebsiteStatus;
}

export type AnyWebsite = WebsiteV1 | WebsiteV1beta1;
