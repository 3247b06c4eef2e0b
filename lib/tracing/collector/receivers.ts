import type { k8s } from 'cdk8s-plus-34';
import type {
  BearerTokenAuthConfig,
  ComponentId,
  OidcConfig,
  OtlpReceiverConfig,
  OtlpServerConfig,
  ServerTlsConfig,
} from '../collector-config.ts';
import { COLLECTOR_PORTS } from '../names.ts';
import type { SecretMount } from '../tracing-workload.ts';
import { COLLECTOR_TLS_DIR, type SecretKeyRef, secretEnv } from './secrets.ts';

/** Who may send spans to the collector's OTLP receivers. */
export interface CollectorReceiverSecurity {
  /**
   * TLS from a Secret with `tls.crt`/`tls.key`, and `ca.crt` to verify clients: with
   * `requireClientCertificate` (the default) only clients holding a certificate it signed connect.
   * @default plaintext
   */
  readonly tls?: ReceiverTls;
  /** Senders must present this bearer token. @default none */
  readonly bearerToken?: SecretKeyRef;
  /** Senders must present an OIDC token from this issuer for this audience. @default none */
  readonly oidc?: ReceiverOidc;
}

/** TLS on the collector's OTLP receivers. */
export interface ReceiverTls {
  /** A Secret with `tls.crt`, `tls.key`, and `ca.crt` to verify clients. */
  readonly secretName: string;
  /** Only clients holding a certificate signed by `ca.crt` connect (mutual TLS). @default true */
  readonly requireClientCertificate?: boolean;
}

/** OIDC tokens the collector's receivers require of senders. */
export interface ReceiverOidc {
  readonly issuerUrl: string;
  readonly audience: string;
}

/** Throws when the receivers' security asks for two ways of authenticating senders. */
export function assertValidReceiverSecurity(security: CollectorReceiverSecurity, where: string): void {
  if (security.bearerToken && security.oidc)
    throw new Error(`${where}: receiverSecurity takes bearerToken or oidc, not both`);
}

/** The OTLP receiver, its authenticator extension, and what the pod must provide for them. */
export interface OtlpReceivers {
  readonly receivers: { readonly otlp: OtlpReceiverConfig };
  readonly extensions: Record<ComponentId, BearerTokenAuthConfig | OidcConfig>;
  readonly env: k8s.EnvVar[];
  readonly secretMounts: SecretMount[];
}

/** OTLP over gRPC and HTTP on every interface, both with the same TLS and authentication of senders. */
export function otlpReceivers(security: CollectorReceiverSecurity): OtlpReceivers {
  const dir = `${COLLECTOR_TLS_DIR}/receiver`;
  const mutual = security.tls?.requireClientCertificate ?? true;
  const tls = (): ServerTlsConfig => ({
    cert_file: `${dir}/tls.crt`,
    key_file: `${dir}/tls.key`,
    ...(mutual ? { client_ca_file: `${dir}/ca.crt` } : {}),
    min_version: '1.2',
  });
  const extensions: Record<ComponentId, BearerTokenAuthConfig | OidcConfig> = {};
  const env: k8s.EnvVar[] = [];
  if (security.bearerToken) {
    env.push(secretEnv('RECEIVER_BEARER_TOKEN', security.bearerToken));
    extensions['bearertokenauth/receiver'] = { token: '${env:RECEIVER_BEARER_TOKEN}' };
  }
  if (security.oidc)
    extensions['oidc/receiver'] = { issuer_url: security.oidc.issuerUrl, audience: security.oidc.audience };
  const authenticator = security.bearerToken ? 'bearertokenauth/receiver' : security.oidc ? 'oidc/receiver' : undefined;
  const server = (port: number): OtlpServerConfig => ({
    endpoint: `0.0.0.0:${port}`,
    ...(security.tls ? { tls: tls() } : {}),
    ...(authenticator ? { auth: { authenticator } } : {}),
  });
  return {
    receivers: {
      otlp: { protocols: { grpc: server(COLLECTOR_PORTS['otlp-grpc']), http: server(COLLECTOR_PORTS['otlp-http']) } },
    },
    extensions,
    env,
    secretMounts: security.tls
      ? [
          {
            secretName: security.tls.secretName,
            mountPath: dir,
            keys: mutual ? ['ca.crt', 'tls.crt', 'tls.key'] : ['tls.crt', 'tls.key'],
          },
        ]
      : [],
  };
}
