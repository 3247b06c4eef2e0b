/**
 * The Website API's OpenAPI v3 schemas, one per version. They are the single source for the
 * CRD (website-crd.ts), the generated TypeScript types (imports/, `npm run codegen`) and the
 * documentation `kubectl explain` prints, so every field carries a description.
 */

/** Default API group of the Website resource. */
export const DEFAULT_GROUP = 'web.example.com';
/** Colour used when `spec.color` is omitted (spec §2). */
export const DEFAULT_COLOR = '#2196F3';
/** A CSS hex colour: #RGB or #RRGGBB. */
export const COLOR_PATTERN = '^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$';
/** Prefix of the Deployment and Service the operator creates for a Website. */
export const WORKLOAD_PREFIX = 'website-';
/** A Service name is a DNS-1035 label of at most 63 characters, and it is `website-<name>`. */
export const MAX_WEBSITE_NAME_LENGTH = 63 - WORKLOAD_PREFIX.length;
/** A DNS name, as the Gateway API's `Hostname` accepts it without a wildcard: `spec.host`. */
export const HOSTNAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** The Gateway API's bound on a hostname. */
export const MAX_HOSTNAME_LENGTH = 253;
/** Upper bound on the title, so CEL cost estimates stay bounded and pages stay reasonable. */
export const MAX_TITLE_LENGTH = 4096;

/** Inclusive bounds of `spec.replicas`. */
export interface ReplicaBounds {
  /** @default 1 */
  readonly minimum?: number;
  /** @default 5 */
  readonly maximum?: number;
}

/** The spec's bounds: 1 to 5 replicas (spec §8). */
export const DEFAULT_REPLICA_BOUNDS: Required<ReplicaBounds> = { minimum: 1, maximum: 5 };

/** A CEL validation rule evaluated by the API server itself. */
export interface ValidationRule {
  readonly rule: string;
  readonly message: string;
  readonly fieldPath?: string;
  readonly reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

/** The subset of a CRD's structural OpenAPI v3 schema this package writes, keys verbatim. */
export interface JsonSchema {
  readonly type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  readonly description?: string;
  readonly properties?: Record<string, JsonSchema>;
  readonly required?: string[];
  readonly items?: JsonSchema;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly enum?: string[];
  readonly default?: unknown;
  readonly 'x-kubernetes-validations'?: readonly ValidationRule[];
  readonly 'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
}

// Name rules live at the root: only there can CEL see metadata.name. fieldPath makes the API
// server report them as `metadata.name: Invalid value: ...` rather than against the whole object.
const nameRules: readonly ValidationRule[] = [
  {
    rule: `self.metadata.name.size() <= ${MAX_WEBSITE_NAME_LENGTH}`,
    fieldPath: '.metadata.name',
    message:
      `metadata.name must be at most ${MAX_WEBSITE_NAME_LENGTH} characters: the operator creates a Service named ` +
      `'${WORKLOAD_PREFIX}<name>', and Service names are limited to 63 characters`,
  },
  {
    rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
    fieldPath: '.metadata.name',
    message:
      "metadata.name must consist of lowercase letters, digits and '-' (no '.'): it becomes part of the Service " +
      `name '${WORKLOAD_PREFIX}<name>', which must be a DNS label`,
  },
];

function notBlank(field: string): ValidationRule {
  return {
    rule: 'self.trim().size() > 0',
    message: `${field} must not be blank: set it to the text the page should show`,
    reason: 'FieldValueInvalid',
  };
}

function titleSchema(field: string): JsonSchema {
  return {
    type: 'string',
    description: 'Title shown on the website, as plain text: it is HTML-escaped before it reaches the page.',
    minLength: 1,
    maxLength: MAX_TITLE_LENGTH,
    'x-kubernetes-validations': [notBlank(field)],
  };
}

function replicasSchema(bounds: Required<ReplicaBounds>): JsonSchema {
  return {
    type: 'integer',
    description: `Number of pods serving the website, from ${bounds.minimum} to ${bounds.maximum}.`,
    minimum: bounds.minimum,
    maximum: bounds.maximum,
  };
}

const colorSchema: JsonSchema = {
  type: 'string',
  description: `Theme (background) colour of the page, a CSS hex colour: #RGB or #RRGGBB. Defaults to ${DEFAULT_COLOR}.`,
  default: DEFAULT_COLOR,
  pattern: COLOR_PATTERN,
};

const hostSchema: JsonSchema = {
  type: 'string',
  description:
    "Host the Website is served at through the platform's Gateway, a DNS name such as shop.example.com: only under the suffixes the operator allows. Without it the operator gives the Website <name>-<namespace>.<its domain>. An operator without a Gateway serves no host.",
  maxLength: MAX_HOSTNAME_LENGTH,
  pattern: HOSTNAME_PATTERN,
};

/** The shape of metav1.Condition, as controller-gen writes it. */
const conditionSchema: JsonSchema = {
  type: 'object',
  description: "One aspect of the Website's current state (metav1.Condition).",
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: {
      type: 'string',
      description: 'Type of condition in CamelCase, for example Ready.',
      maxLength: 316,
      pattern:
        '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    },
    status: {
      type: 'string',
      description: 'Status of the condition: True, False or Unknown.',
      enum: ['True', 'False', 'Unknown'],
    },
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      description: 'metadata.generation of the Website this condition was set for.',
    },
    lastTransitionTime: {
      type: 'string',
      format: 'date-time',
      description: 'Last time the condition changed from one status to another.',
    },
    reason: {
      type: 'string',
      description: 'Programmatic identifier of the reason for the last transition, in CamelCase.',
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    },
    message: { type: 'string', description: 'Human-readable message about the transition.', maxLength: 32768 },
  },
};

/** Status is the same in every version; only the operator writes it, through /status. */
export const websiteStatusSchema: JsonSchema = {
  type: 'object',
  description: 'Observed state of the Website, written by the operator through the status subresource.',
  properties: {
    availableReplicas: {
      type: 'integer',
      format: 'int32',
      minimum: 0,
      description: "Number of available pods of the Website's Deployment.",
    },
    url: {
      type: 'string',
      description:
        "Where the Website answers: with the operator's Gateway, http(s)://<host>/ once the Gateway has accepted its route; otherwise the in-cluster URL of its Service, for example http://website-<name>.<namespace>.svc.cluster.local.",
    },
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      minimum: 0,
      description: 'metadata.generation the operator last reconciled.',
    },
    conditions: {
      type: 'array',
      description: 'Current conditions of the Website. Ready is True once every replica is available.',
      maxItems: 8,
      items: conditionSchema,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
  },
};

/** A version's whole object: its `spec` (fields and which are required) under the parts every version shares. */
function root(description: string, spec: Pick<JsonSchema, 'required' | 'properties'>): JsonSchema {
  return {
    type: 'object',
    description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'Versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'REST resource this object represents.' },
      // A CRD may constrain only name and generateName; declaring name lets the rules name it as fieldPath.
      metadata: { type: 'object', properties: { name: { type: 'string' } } },
      spec: { type: 'object', description: 'Desired state of the Website.', ...spec },
      status: websiteStatusSchema,
    },
    'x-kubernetes-validations': nameRules,
  };
}

/** v1, the storage version: `spec.title`, `spec.replicas`, `spec.color`. */
export function websiteV1Schema(replicas: Required<ReplicaBounds> = DEFAULT_REPLICA_BOUNDS): JsonSchema {
  return root(
    'A Website: a page showing a title on a colour, served by a Deployment and a Service the operator keeps.',
    {
      required: ['title', 'replicas'],
      properties: {
        title: titleSchema('spec.title'),
        replicas: replicasSchema(replicas),
        color: colorSchema,
        host: hostSchema,
      },
    },
  );
}

/** v1beta1, served for older clients: `spec.heading`, `spec.instances`, `spec.theme.color`. */
export function websiteV1beta1Schema(replicas: Required<ReplicaBounds> = DEFAULT_REPLICA_BOUNDS): JsonSchema {
  return root(
    'A Website (v1beta1, deprecated: use v1, where heading is title, instances is replicas and theme.color is color).',
    {
      required: ['heading', 'instances'],
      properties: {
        heading: titleSchema('spec.heading'),
        instances: replicasSchema(replicas),
        theme: {
          type: 'object',
          description: 'Look of the page.',
          default: {},
          properties: { color: colorSchema },
        },
        host: hostSchema,
      },
    },
  );
}
