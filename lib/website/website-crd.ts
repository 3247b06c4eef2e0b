import { ApiObject } from 'cdk8s';
import { Construct, type IConstruct } from 'constructs';
import { OPERATOR_NAMESPACE, WEBHOOK_PATH, WEBHOOK_SERVICE_NAME, WEBHOOK_SERVICE_PORT } from '../operator/names.ts';
import {
  DEFAULT_GROUP,
  DEFAULT_REPLICA_BOUNDS,
  type JsonSchema,
  type ReplicaBounds,
  websiteV1beta1Schema,
  websiteV1Schema,
} from './schema.ts';

/** The versions of the Website API this package knows. */
export type WebsiteVersionName = 'v1' | 'v1beta1';
const VERSION_NAMES: readonly string[] = ['v1', 'v1beta1'] satisfies WebsiteVersionName[];

/** One entry of the CRD's `spec.versions`. */
export interface WebsiteVersion {
  /** Version name: `v1` or `v1beta1`. */
  readonly name: string;
  /** Whether clients can read and write this version. */
  readonly served: boolean;
  /** Whether objects are persisted in this version; exactly one version must be. */
  readonly storage: boolean;
}

/** Where the API server sends ConversionReview requests. */
export interface ConversionWebhookService {
  /** Name of the Service in front of the conversion webhook. */
  readonly name: string;
  /** Namespace of that Service. */
  readonly namespace: string;
  /**
   * URL path of the webhook.
   * @default '/convert'
   */
  readonly path?: string;
  /**
   * Service port.
   * @default 443
   */
  readonly port?: number;
}

export interface WebsiteCrdProps {
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * Versions to register. When more than one is served the API server converts between them
   * through `conversionWebhook`; with a single served version the strategy is None.
   * @default v1 (served, storage) and v1beta1 (served)
   */
  readonly versions?: WebsiteVersion[];
  /**
   * Inclusive bounds of `spec.replicas`.
   * @default { minimum: 1, maximum: 5 }
   */
  readonly replicas?: ReplicaBounds;
  /**
   * The operator that serves this CRD's conversion webhook, usually a `WebsiteOperator`. The CRD
   * then takes from it everything it needs: the group (when `group` is not set), the webhook
   * Service's name, namespace, port and path, and the annotations of its certificate mode
   * (cert-manager's CA injection). Setting `conversionWebhook` as well is an error, and so is a
   * `group` or an annotation that contradicts the operator.
   * @default none: `conversionWebhook`, or website-operator-webhook in website-system
   */
  readonly operator?: IWebsiteCrdOperator;
  /**
   * Service of the conversion webhook, used when more than one version is served. Set it only for
   * an operator deployed outside this cdk8s app; otherwise pass `operator`.
   * @default from `operator`, else website-operator-webhook in website-system (port 443, /convert)
   */
  readonly conversionWebhook?: ConversionWebhookService;
  /**
   * Extra annotations on the CRD. Those `operator` needs are added without being listed here.
   * @default none
   */
  readonly annotations?: Record<string, string>;
}

/**
 * What a WebsiteCrd needs from the operator that converts its versions. `WebsiteOperator`
 * implements it; so can any construct that deploys a compatible operator.
 */
export interface IWebsiteCrdOperator extends IConstruct {
  /** API group of the Websites the operator reconciles. */
  readonly group: string;
  /** Where the operator serves ConversionReview requests (every field set). */
  readonly conversionWebhook: ConversionWebhookService;
  /** Annotations the CRD must carry for the operator's webhook certificate (none for some modes). */
  readonly crdAnnotations: Record<string, string>;
}

/**
 * Whether a construct deploys an operator for a WebsiteCrd (it has what WebsiteCrdOperator names),
 * so that a CRD left unconnected can find such operators in its app and fail at synth instead of
 * pointing its webhook at nothing.
 */
function isWebsiteCrdOperator(construct: object): construct is IWebsiteCrdOperator {
  const candidate = construct as Partial<IWebsiteCrdOperator>;
  return (
    typeof candidate.group === 'string' &&
    typeof candidate.conversionWebhook === 'object' &&
    typeof candidate.crdAnnotations === 'object'
  );
}

/** `webhook` with the defaults of what it leaves unset. */
const withDefaults = (webhook?: ConversionWebhookService): Required<ConversionWebhookService> => ({
  ...DEFAULT_CONVERSION_WEBHOOK,
  ...webhook,
});
const sameWebhook = (a: ConversionWebhookService, b: ConversionWebhookService) => {
  const [x, y] = [withDefaults(a), withDefaults(b)];
  return x.name === y.name && x.namespace === y.namespace && x.port === y.port && x.path === y.path;
};
const describeWebhook = (webhook: ConversionWebhookService) => {
  const w = withDefaults(webhook);
  return `${w.namespace}/${w.name}:${w.port}${w.path}`;
};

export const DEFAULT_VERSIONS: readonly WebsiteVersion[] = [
  { name: 'v1', served: true, storage: true },
  { name: 'v1beta1', served: true, storage: false },
];

/** Where WebsiteOperator serves conversions with its defaults. */
export const DEFAULT_CONVERSION_WEBHOOK: Required<ConversionWebhookService> = {
  name: WEBHOOK_SERVICE_NAME,
  namespace: OPERATOR_NAMESPACE,
  path: WEBHOOK_PATH,
  port: WEBHOOK_SERVICE_PORT,
};

const schemas: Record<WebsiteVersionName, (bounds: Required<ReplicaBounds>) => JsonSchema> = {
  v1: websiteV1Schema,
  v1beta1: websiteV1beta1Schema,
};

interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'date';
  readonly jsonPath: string;
  readonly description?: string;
  readonly priority?: number;
}

const statusColumns: readonly PrinterColumn[] = [
  {
    name: 'Available',
    type: 'integer',
    jsonPath: '.status.availableReplicas',
    description: 'Available pods.',
    priority: 1,
  },
  { name: 'URL', type: 'string', jsonPath: '.status.url', description: 'Where the Website answers.', priority: 1 },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

// `kubectl get` shows columns in this order; priority-1 columns only with `-o wide`.
const printerColumns: Record<WebsiteVersionName, readonly PrinterColumn[]> = {
  v1: [
    { name: 'Title', type: 'string', jsonPath: '.spec.title', description: 'Title shown on the page.' },
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas', description: 'Desired pods.' },
    { name: 'Color', type: 'string', jsonPath: '.spec.color', description: 'Theme colour.' },
    ...statusColumns,
  ],
  v1beta1: [
    { name: 'Heading', type: 'string', jsonPath: '.spec.heading', description: 'Title shown on the page.' },
    { name: 'Instances', type: 'integer', jsonPath: '.spec.instances', description: 'Desired pods.' },
    { name: 'Color', type: 'string', jsonPath: '.spec.theme.color', description: 'Theme colour.' },
    ...statusColumns,
  ],
};

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The CustomResourceDefinition of the Website API (spec §2 Area B, §9).
 *
 * Misconfiguration (no or several storage versions, inverted replica bounds, a malformed group)
 * throws here, so `npm run synth` fails with the construct's path and what to change.
 */
export class WebsiteCrd extends Construct {
  /** API group, for example web.example.com. */
  public readonly group: string;
  /** CRD name: `websites.<group>`. */
  public readonly name: string;
  /** The storage version (`v1` unless `versions` says otherwise). */
  public readonly storageVersion: string;
  /** The CRD object. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: WebsiteCrdProps = {}) {
    super(scope, id);
    const fail = (message: string): never => {
      throw new Error(`WebsiteCrd at '${this.node.path}': ${message}`);
    };

    const operator = props.operator;
    this.group = props.group ?? operator?.group ?? DEFAULT_GROUP;
    if (operator && operator.group !== this.group) {
      fail(
        `group '${this.group}' differs from the group '${operator.group}' of operator '${operator.node.path}': give both the same group, or leave the CRD's unset`,
      );
    }
    if (operator && props.conversionWebhook) {
      fail(
        `set either operator or conversionWebhook, not both: operator '${operator.node.path}' already says where its webhook is (${describeWebhook(operator.conversionWebhook)})`,
      );
    }
    const annotations: Record<string, string> = { ...props.annotations };
    for (const [key, value] of Object.entries(operator?.crdAnnotations ?? {})) {
      if (key in annotations && annotations[key] !== value) {
        fail(
          `annotation '${key}' is '${annotations[key]}', but operator '${operator!.node.path}' needs '${value}': remove it from annotations`,
        );
      }
      annotations[key] = value;
    }
    if (this.group.length > 253 || !DNS_SUBDOMAIN.test(this.group) || !this.group.includes('.')) {
      fail(`group '${this.group}' must be a DNS subdomain with at least one dot, for example '${DEFAULT_GROUP}'`);
    }
    this.name = `websites.${this.group}`;

    const bounds = { ...DEFAULT_REPLICA_BOUNDS, ...props.replicas };
    if (!Number.isInteger(bounds.minimum) || !Number.isInteger(bounds.maximum) || bounds.minimum < 0) {
      fail(
        `replicas bounds must be non-negative integers, got minimum ${bounds.minimum} and maximum ${bounds.maximum}`,
      );
    }
    if (bounds.minimum > bounds.maximum) {
      fail(`replicas.minimum (${bounds.minimum}) is greater than replicas.maximum (${bounds.maximum}): swap them`);
    }

    const versions = props.versions ?? DEFAULT_VERSIONS;
    const names = versions.map((v) => v.name);
    for (const name of names) {
      if (!VERSION_NAMES.includes(name))
        fail(`unknown version '${name}': known versions are ${VERSION_NAMES.join(', ')}`);
      if (names.indexOf(name) !== names.lastIndexOf(name)) fail(`version '${name}' is listed more than once`);
    }
    const storage = versions.filter((v) => v.storage);
    if (storage.length !== 1) {
      const found = storage.length === 0 ? 'none does' : `${storage.map((v) => v.name).join(' and ')} do`;
      fail(`exactly one version must have storage: true, but ${found}; mark only v1 as the storage version`);
    }
    if (!storage[0].served) fail(`storage version '${storage[0].name}' must be served`);
    this.storageVersion = storage[0].name;

    const served = versions.filter((v) => v.served);
    const webhook = withDefaults(operator?.conversionWebhook ?? props.conversionWebhook);
    if (served.length > 1 && !operator) {
      // An operator of this group elsewhere in the app must be the one this CRD calls: the constructs
      // example (docs/use/constructs.md; then in the README) once pointed a CRD at website-system while
      // its operator ran in another namespace.
      this.node.addValidation({
        validate: () => {
          const operators = this.node.root.node
            .findAll()
            .flatMap((c) => (isWebsiteCrdOperator(c) && c.group === this.group ? [c] : []));
          if (operators.length === 0 || operators.some((o) => sameWebhook(o.conversionWebhook, webhook))) return [];
          const where = operators
            .map((o) => `'${o.node.path}' serves ${describeWebhook(o.conversionWebhook)}`)
            .join('; ');
          return [
            `WebsiteCrd at '${this.node.path}' sends conversions to ${describeWebhook(webhook)}, but ${where}: pass the operator to the CRD (new WebsiteCrd(scope, id, { operator }))`,
          ];
        },
      });
    }
    const conversion =
      served.length > 1
        ? {
            strategy: 'Webhook',
            webhook: {
              conversionReviewVersions: ['v1'],
              clientConfig: {
                service: { name: webhook.name, namespace: webhook.namespace, path: webhook.path, port: webhook.port },
              },
            },
          }
        : { strategy: 'None' };

    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: {
        name: this.name,
        labels: { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/part-of': 'website-stack' },
        // No annotations key at all when there are none (operator mode, where the operator sets the caBundle).
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
      spec: {
        group: this.group,
        names: {
          kind: 'Website',
          listKind: 'WebsiteList',
          plural: 'websites',
          singular: 'website',
          shortNames: ['ws'],
        },
        scope: 'Namespaced',
        versions: versions.map((v) => ({
          name: v.name,
          served: v.served,
          storage: v.storage,
          ...(v.name === 'v1beta1'
            ? {
                deprecated: true,
                deprecationWarning: `${this.group}/v1beta1 Website is deprecated; use ${this.group}/v1`,
              }
            : {}),
          schema: { openAPIV3Schema: schemas[v.name as WebsiteVersionName](bounds) },
          subresources: { status: {} },
          additionalPrinterColumns: printerColumns[v.name as WebsiteVersionName],
        })),
        conversion,
      },
    });
  }
}
