import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import {
  operatorLabels,
  WEBHOOK_CERTIFICATE_NAME,
  WEBHOOK_SECRET_NAME,
  WEBHOOK_SERVICE_NAME,
  webhookDnsNames,
} from './names.ts';

export interface CertManagerWebhookCertificateProps {
  /** Namespace of the operator and its webhook Service; the Issuers and Certificates live there too. */
  readonly namespace: string;
  /**
   * Service in front of the webhook; the serving certificate covers its DNS names.
   * @default 'website-operator-webhook'
   */
  readonly serviceName?: string;
  /**
   * Secret cert-manager writes the serving certificate to (mounted into the operator pod).
   * @default 'website-operator-webhook-tls'
   */
  readonly secretName?: string;
  /**
   * Name of the serving Certificate; the CA Certificate, its Secret and its Issuer add `-ca`, the
   * bootstrap Issuer `-selfsigned`.
   * @default 'website-operator-webhook'
   */
  readonly certificateName?: string;
}

const CERT_MANAGER_API = 'cert-manager.io/v1';
/** cainjector copies the named Certificate's CA into the annotated object's caBundle. */
export const CERT_MANAGER_INJECT_CA_FROM = 'cert-manager.io/inject-ca-from';

/**
 * cert-manager mode: the conversion webhook's certificate, issued and renewed by cert-manager
 * (which must be installed). A self-signed Issuer bootstraps a CA Certificate; a CA Issuer signs
 * the serving Certificate from that. Why not sign the serving certificate self-signed directly:
 * its caBundle would then change on every renewal (every 60 days with cert-manager's defaults), and
 * until the cainjector and the kubelet both caught up, the API server would reject the renewed
 * certificate. With a CA (10 years, key kept on renewal), the caBundle stays the same.
 *
 * The serving Certificate uses cert-manager's default duration and renewal (90 days, renewed
 * when a third remains). Add `annotations` to the CRD (WebsiteCrd's `annotations` prop) so that
 * cainjector sets its caBundle.
 */
export class CertManagerWebhookCertificate extends Construct {
  /** Annotations for the Website CRD: `cert-manager.io/inject-ca-from: <namespace>/<certificate>`. */
  public readonly crdAnnotations: Record<string, string>;
  /** The Secret holding tls.crt, tls.key and ca.crt. */
  public readonly secretName: string;
  public readonly certificate: ApiObject;

  constructor(scope: Construct, id: string, props: CertManagerWebhookCertificateProps) {
    super(scope, id);
    const name = props.certificateName ?? WEBHOOK_CERTIFICATE_NAME;
    const caName = `${name}-ca`;
    const bootstrapName = `${name}-selfsigned`;
    this.secretName = props.secretName ?? WEBHOOK_SECRET_NAME;
    const metadata = (objectName: string) => ({
      name: objectName,
      namespace: props.namespace,
      labels: operatorLabels('webhook'),
    });

    new ApiObject(this, 'SelfSignedIssuer', {
      apiVersion: CERT_MANAGER_API,
      kind: 'Issuer',
      metadata: metadata(bootstrapName),
      spec: { selfSigned: {} },
    });
    new ApiObject(this, 'CaCertificate', {
      apiVersion: CERT_MANAGER_API,
      kind: 'Certificate',
      metadata: metadata(caName),
      spec: {
        isCA: true,
        commonName: caName,
        secretName: caName,
        duration: '87600h',
        // Renewing with the same key keeps serving certificates signed before the renewal valid.
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Never' },
        issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: bootstrapName },
      },
    });
    new ApiObject(this, 'CaIssuer', {
      apiVersion: CERT_MANAGER_API,
      kind: 'Issuer',
      metadata: metadata(caName),
      spec: { ca: { secretName: caName } },
    });
    const serviceName = props.serviceName ?? WEBHOOK_SERVICE_NAME;
    this.certificate = new ApiObject(this, 'Certificate', {
      apiVersion: CERT_MANAGER_API,
      kind: 'Certificate',
      metadata: metadata(name),
      spec: {
        secretName: this.secretName,
        commonName: `${serviceName}.${props.namespace}.svc`,
        dnsNames: webhookDnsNames(serviceName, props.namespace),
        usages: ['server auth', 'digital signature'],
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
        issuerRef: { group: 'cert-manager.io', kind: 'Issuer', name: caName },
      },
    });
    this.crdAnnotations = { [CERT_MANAGER_INJECT_CA_FROM]: `${props.namespace}/${name}` };
  }
}
