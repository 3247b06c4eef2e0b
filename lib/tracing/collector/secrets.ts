import type { k8s } from 'cdk8s-plus-34';

/** A key of a Secret in the collector's namespace. */
export interface SecretKeyRef {
  readonly secretName: string;
  readonly key: string;
}

/** Where the collector pod mounts TLS Secrets. */
export const COLLECTOR_TLS_DIR = '/etc/otelcol/tls';

/** An environment variable holding a Secret's key, for the configuration to read as `${env:NAME}`. */
export function secretEnv(name: string, ref: SecretKeyRef): k8s.EnvVar {
  return { name, valueFrom: { secretKeyRef: { name: ref.secretName, key: ref.key } } };
}
