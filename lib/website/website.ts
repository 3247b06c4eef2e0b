import { ApiObject, type ApiObjectMetadata, type GroupVersionKind } from 'cdk8s';
import type { Construct } from 'constructs';
import { DEFAULT_GROUP } from './schema.ts';
import type { WebsiteSpec } from './types.ts';

export interface WebsiteProps {
  /** Object metadata; `name` is the Website's name (at most 55 characters, a DNS label). */
  readonly metadata?: ApiObjectMetadata;
  /** Desired state: title, replicas and optionally colour. */
  readonly spec: WebsiteSpec;
  /**
   * API group of the Website CRD it is an instance of.
   * @default 'web.example.com'
   */
  readonly group?: string;
}

/**
 * A Website object (v1), for cdk8s apps that ship Websites next to their own charts.
 * The API server validates it on apply; its spec is typed from the same schema as the CRD.
 */
export class Website extends ApiObject {
  /** Group, version and kind of a Website in `group`. */
  public static gvk(group: string = DEFAULT_GROUP): GroupVersionKind {
    return { apiVersion: `${group}/v1`, kind: 'Website' };
  }

  constructor(scope: Construct, id: string, props: WebsiteProps) {
    super(scope, id, { ...Website.gvk(props.group), metadata: props.metadata, spec: props.spec });
  }
}
