import type { k8s } from 'cdk8s-plus-34';
import { assertOneOf } from '../../props.ts';
import type {
  BasicAuthConfig,
  BearerTokenAuthConfig,
  ClientTlsConfig,
  ComponentId,
  OAuth2ClientConfig,
  OtlpExporterConfig,
} from '../collector-config.ts';
import type { SecretMount } from '../tracing-workload.ts';
import { COLLECTOR_TLS_DIR, type SecretKeyRef, secretEnv } from './secrets.ts';

/** OAuth2's client-credentials grant, as ForwardingAuth.oauth2ClientCredentials takes it. */
export interface OAuth2ClientCredentials {
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: SecretKeyRef;
  /** @default none */
  readonly scopes?: string[];
}

type ForwardingAuthSettings =
  | { readonly type: 'bearer-token'; readonly token: SecretKeyRef }
  | { readonly type: 'basic'; readonly username: string; readonly password: SecretKeyRef }
  | ({ readonly type: 'oauth2-client-credentials' } & OAuth2ClientCredentials);

/** How the collector authenticates to a backend; every credential comes from a Secret. */
export class ForwardingAuth {
  /** `Authorization: Bearer <token>`. */
  public static bearerToken(token: SecretKeyRef): ForwardingAuth {
    return new ForwardingAuth({ type: 'bearer-token', token });
  }

  /** HTTP basic authentication. */
  public static basic(username: string, password: SecretKeyRef): ForwardingAuth {
    return new ForwardingAuth({ type: 'basic', username, password });
  }

  /** A token from `tokenUrl` by the client-credentials grant, renewed before it expires. */
  public static oauth2ClientCredentials(credentials: OAuth2ClientCredentials): ForwardingAuth {
    return new ForwardingAuth({ type: 'oauth2-client-credentials', ...credentials });
  }

  /** @internal the settings, by type */
  public readonly _settings: ForwardingAuthSettings;

  private constructor(settings: ForwardingAuthSettings) {
    this._settings = settings;
  }

  /** `bearer-token`, `basic` or `oauth2-client-credentials`. */
  public get type(): string {
    return this._settings.type;
  }
}

/** TLS from the collector to a backend. */
export interface BackendTls {
  /** A Secret with `ca.crt` (a private CA), and `tls.crt`/`tls.key` for a client certificate. @default the system's roots */
  readonly secretName?: string;
  /** Present the Secret's certificate (mutual TLS). @default false */
  readonly clientCertificate?: boolean;
}

/** A downstream OTLP receiver the collector exports to. */
export interface CollectorBackend {
  /** Names the exporter (`otlp_grpc/<name>`); lower-case letters, digits and dashes. */
  readonly name: string;
  /** gRPC: host:port. HTTP: a base URL (`https://otlp.example.net`). */
  readonly endpoint: string;
  /** @default 'grpc' */
  readonly protocol?: 'grpc' | 'http';
  /**
   * TLS to a gRPC backend (an HTTP backend follows its URL's scheme): `secretName` names a Secret
   * with `ca.crt` for a private CA (the system's roots otherwise), and with `tls.crt`/`tls.key`
   * when `clientCertificate` is set (mutual TLS). Plaintext when omitted.
   * @default plaintext
   */
  readonly tls?: BackendTls;
  /** Credentials travel over TLS only: a backend with auth needs `tls` (gRPC) or an https URL. @default none */
  readonly auth?: ForwardingAuth;
}

/**
 * While a backend is down the collector keeps what it accepted and retries: spans wait in memory,
 * counted by span (a request's size depends on the sender), 100,000 of them: a minute's outage at
 * about 1,500 spans per second, inside memory_limiter's share of the default 512 MiB limit.
 * Retries back off up to 10 s, so a backend that comes back gets the backlog within seconds; what
 * is still failing after 5 minutes is dropped (and counted in otelcol_exporter_send_failed_spans).
 */
export const EXPORT_QUEUE = { enabled: true, sizer: 'items', queue_size: 100_000 } as const;
export const EXPORT_RETRY = {
  enabled: true,
  initial_interval: '1s',
  max_interval: '10s',
  max_elapsed_time: '300s',
} as const;

/** Throws, naming the backend and what to change, at the first backend the collector could not export to safely. */
export function assertValidBackends(backends: readonly CollectorBackend[], where: string): void {
  if (backends.length === 0) throw new Error(`${where}: name at least one backend to export to`);
  const names = new Set<string>();
  for (const backend of backends) {
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(backend.name))
      throw new Error(`${where}: backend name '${backend.name}' must be lower-case letters, digits and dashes`);
    // The collector's own receiver takes this name for its authenticator, credential variable and TLS directory.
    if (backend.name === 'receiver')
      throw new Error(
        `${where}: backend name 'receiver' is taken by the collector's own receiver settings; choose another name`,
      );
    if (names.has(backend.name)) throw new Error(`${where}: two backends are named '${backend.name}'`);
    names.add(backend.name);
    assertOneOf(where, `backend '${backend.name}': protocol`, backend.protocol, ['grpc', 'http']);
    const http = backend.protocol === 'http';
    if (http && !/^https?:\/\/[^/]+/.test(backend.endpoint))
      throw new Error(
        `${where}: backend '${backend.name}' speaks OTLP/HTTP: its endpoint must be an http(s):// base URL, got '${backend.endpoint}'`,
      );
    const encrypted = http ? backend.endpoint.startsWith('https://') : backend.tls !== undefined;
    if (backend.auth && !encrypted) {
      throw new Error(
        `${where}: backend '${backend.name}' would send its ${backend.auth.type} credentials in clear text; ${http ? 'use an https:// endpoint' : 'set tls (with secretName for a private CA)'}`,
      );
    }
    if (http && backend.tls && !encrypted)
      throw new Error(`${where}: backend '${backend.name}' has tls settings but an http:// endpoint; use https://`);
    if (backend.tls?.clientCertificate && !backend.tls.secretName)
      throw new Error(
        `${where}: backend '${backend.name}' wants a client certificate: name the Secret holding tls.crt and tls.key in tls.secretName`,
      );
  }
}

/** The exporter's id: `otlp_grpc/<name>` or `otlp_http/<name>`. */
export function exporterId(backend: CollectorBackend): ComponentId {
  return `${backend.protocol === 'http' ? 'otlp_http' : 'otlp_grpc'}/${backend.name}`;
}

/** The exporter's client TLS, and the Secret whose files it reads. */
export function exporterTls(backend: CollectorBackend): {
  readonly tls?: ClientTlsConfig;
  readonly secretMounts: SecretMount[];
} {
  // gRPC is plaintext only when told so; an HTTP backend's scheme says it.
  if (!backend.tls) return { ...(backend.protocol === 'http' ? {} : { tls: { insecure: true } }), secretMounts: [] };
  if (!backend.tls.secretName) return { tls: { min_version: '1.2' }, secretMounts: [] };
  const client = backend.tls.clientCertificate ?? false;
  const dir = `${COLLECTOR_TLS_DIR}/${backend.name}`;
  return {
    tls: {
      ca_file: `${dir}/ca.crt`,
      ...(client ? { cert_file: `${dir}/tls.crt`, key_file: `${dir}/tls.key` } : {}),
      min_version: '1.2',
    },
    secretMounts: [
      {
        secretName: backend.tls.secretName,
        mountPath: dir,
        keys: client ? ['ca.crt', 'tls.crt', 'tls.key'] : ['ca.crt'],
      },
    ],
  };
}

/** The authenticator extension an exporter names, and the Secret-fed variable its credential is read from. */
export interface ExporterAuth {
  readonly authenticator: ComponentId;
  readonly extension: BearerTokenAuthConfig | BasicAuthConfig | OAuth2ClientConfig;
  readonly env: k8s.EnvVar;
}

/** `auth` of backend `name` as an authenticator extension; the credential stays in its Secret, referenced as `${env:...}`. */
export function exporterAuth(name: string, forwardingAuth: ForwardingAuth): ExporterAuth {
  const auth = forwardingAuth._settings;
  const credential = (what: string, ref: SecretKeyRef) => {
    const variable = [name, what]
      .join('_')
      .toUpperCase()
      .replace(/[^A-Z0-9]+/g, '_');
    return { env: secretEnv(variable, ref), value: `\${env:${variable}}` };
  };
  if (auth.type === 'bearer-token') {
    const token = credential('bearer_token', auth.token);
    return { authenticator: `bearertokenauth/${name}`, extension: { token: token.value }, env: token.env };
  }
  if (auth.type === 'basic') {
    const password = credential('password', auth.password);
    return {
      authenticator: `basicauth/${name}`,
      extension: { client_auth: { username: auth.username, password: password.value } },
      env: password.env,
    };
  }
  const secret = credential('client_secret', auth.clientSecret);
  return {
    authenticator: `oauth2client/${name}`,
    extension: {
      client_id: auth.clientId,
      client_secret: secret.value,
      token_url: auth.tokenUrl,
      ...(auth.scopes ? { scopes: [...auth.scopes] } : {}),
    },
    env: secret.env,
  };
}

/** One backend's exporter, with its authenticator extension and what the pod must provide for both. */
export interface BackendExporter {
  readonly id: ComponentId;
  readonly exporter: OtlpExporterConfig;
  readonly extensions: Record<ComponentId, ExporterAuth['extension']>;
  readonly env: k8s.EnvVar[];
  readonly secretMounts: SecretMount[];
}

/** The exporter to `backend` (validated by assertValidBackends): TLS, credentials, and queueing and retries through outages. */
export function backendExporter(backend: CollectorBackend): BackendExporter {
  const { tls, secretMounts } = exporterTls(backend);
  const auth = backend.auth ? exporterAuth(backend.name, backend.auth) : undefined;
  return {
    id: exporterId(backend),
    exporter: {
      endpoint: backend.endpoint,
      ...(tls ? { tls } : {}),
      ...(auth ? { auth: { authenticator: auth.authenticator } } : {}),
      retry_on_failure: EXPORT_RETRY,
      sending_queue: EXPORT_QUEUE,
    },
    extensions: auth ? { [auth.authenticator]: auth.extension } : {},
    env: auth ? [auth.env] : [],
    secretMounts,
  };
}
