/** Names the operator's manifests and its runtime agree on. */
export const OPERATOR_NAME = 'website-operator';
export const OPERATOR_NAMESPACE = 'website-system';
export const WEBHOOK_SERVICE_NAME = 'website-operator-webhook';
/** The webhook Service's port, which the API server dials (the pod listens on OPERATOR_PORTS.webhook). */
export const WEBHOOK_SERVICE_PORT = 443;
/** The URL path the operator serves ConversionReview requests on. */
export const WEBHOOK_PATH = '/convert';
export const LEASE_NAME = 'website-operator';
/** Secret holding the conversion webhook's serving certificate (kubernetes.io/tls), in either certificate mode. */
export const WEBHOOK_SECRET_NAME = 'website-operator-webhook-tls';
/** cert-manager Certificate (cert-manager mode) whose CA the CRD's conversion webhook trusts. */
export const WEBHOOK_CERTIFICATE_NAME = 'website-operator-webhook';
/** Where the operator pod mounts the webhook Secret in cert-manager mode. */
export const WEBHOOK_CERT_DIR = '/etc/webhook/tls';

/** Container ports of the operator. */
export const OPERATOR_PORTS = { metrics: 8080, health: 8081, webhook: 9443 } as const;

/**
 * Who fills the conversion webhook's TLS Secret:
 * - `operator`: the operator itself creates a CA and a serving certificate, renews them, and
 *   patches the CRD's caBundle (needs no add-on, but RBAC on that one Secret and that one CRD);
 * - `cert-manager`: cert-manager issues the certificate and its cainjector patches the caBundle;
 *   the operator only reads the mounted files and needs no extra RBAC.
 */
export type WebhookCertificateMode = 'operator' | 'cert-manager';
export const WEBHOOK_CERTIFICATE_MODES: readonly string[] = [
  'operator',
  'cert-manager',
] satisfies WebhookCertificateMode[];

/**
 * DNS names the API server may use for the webhook Service: it dials `<service>.<namespace>.svc`
 * and verifies the certificate against that name; the others cover in-cluster clients and tools.
 */
export function webhookDnsNames(service: string, namespace: string, clusterDomain = 'cluster.local'): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.${clusterDomain}`,
  ];
}

/**
 * Labels shared by every object of the operator's deployment. The instance is the installation,
 * named like its Deployment (Polaris's metadataAndInstanceMismatched).
 */
export function operatorLabels(component: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': OPERATOR_NAME,
    'app.kubernetes.io/instance': OPERATOR_NAME,
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': 'website-stack',
  };
}
