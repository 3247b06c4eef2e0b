import { k8s } from 'cdk8s-plus-34';
import { urlPort } from '../network-policy.ts';
import { restrictedContainerSecurityContext } from '../security.ts';
import type { SecretKeyRef } from './collector/secrets.ts';
import { TRACING_IMAGES } from './names.ts';

/** A setting written into the manifest, or read at run time from a key of a Secret the user creates (what dist/ does). */
export type OidcSetting = string | SecretKeyRef;

/** OIDC in front of the UI and query API: oauth2-proxy beside Jaeger, which then listens on localhost only. */
export interface QueryOidcProps {
  /** The provider's issuer URL: oauth2-proxy reads `<issuerUrl>/.well-known/openid-configuration`. */
  readonly issuerUrl: OidcSetting;
  readonly clientId: OidcSetting;
  readonly clientSecret: SecretKeyRef;
  /** 16, 24 or 32 random bytes, base64: encrypts the session cookie. */
  readonly cookieSecret: SecretKeyRef;
  /**
   * Where the provider sends users back after login: the UI's address as browsers reach it, with
   * the path `/oauth2/callback` (`https://jaeger.example.com/oauth2/callback`); the provider's client
   * must list it among its redirect URIs. Said outright, because oauth2-proxy would otherwise build it
   * from each request, as `https://` whenever the cookie is Secure (wrong over plain HTTP) and from
   * the request's own host behind a proxy that sets no forwarded headers. `https://`, or `http://`
   * on a loopback host (a port-forward): browsers keep the Secure session cookie nowhere else.
   */
  readonly redirectUrl: OidcSetting;
  /**
   * The provider's end-session URL, which oauth2-proxy calls when a user signs out
   * (`/oauth2/sign_out`), with `{id_token}` where the user's ID token goes: Keycloak's is
   * `<issuerUrl>/protocol/openid-connect/logout?id_token_hint={id_token}`. Without it, signing out
   * ends only oauth2-proxy's session, and the provider's single sign-on logs the browser straight
   * back in on its next visit. A Secret's key may be left out of the Secret: then no backend logout.
   * @default none
   */
  readonly backendLogoutUrl?: OidcSetting;
  /**
   * Email domains allowed in: a user whose verified email is in none of them is refused (403) after
   * logging in. The issuer decides who can log in at all (the realm's users, or those its client
   * admits); this narrows it further, e.g. `['example.com']` for a realm shared with outsiders.
   * @default ['*']: every user the issuer authenticates, so the issuer's client is the gate
   */
  readonly emailDomains?: string[];
  /**
   * The addresses (CIDRs) of the reverse proxies in front of the UI, such as the ingress
   * controller's pods: oauth2-proxy believes their `X-Forwarded-*` and `X-Real-IP` headers (the
   * client's address in its logs, the host and scheme of redirects) and nobody else's.
   * @default none: forwarded headers are ignored, whoever sends them
   */
  readonly trustedProxies?: string[];
  /**
   * The CA that signed the provider's certificate, when a private CA did (a company's own Keycloak):
   * a PEM key of a Secret, which oauth2-proxy trusts besides the public CAs of its image. The key may
   * be missing from the Secret: then the public CAs alone.
   * @default the public CAs of the image
   */
  readonly providerCa?: SecretKeyRef;
  /**
   * The issuer's port, for the query pod's NetworkPolicy, when `issuerUrl` comes from a Secret.
   * @default the port of `issuerUrl`; 443 when it comes from a Secret
   */
  readonly issuerPort?: number;
}

/** The port oauth2-proxy listens on in the query pod. */
export const OAUTH2_PROXY_PORT = 4180;

/** Where oauth2-proxy answers liveness and readiness. */
const PING_PATH = '/ping';

/** Where the provider's CA is mounted, one of the folders Go's TLS reads CAs from (SSL_CERT_DIR). */
const PROVIDER_CA_DIR = '/etc/oauth2-proxy/provider-ca';
/** Go's own list of CA folders on Linux (crypto/x509), which SSL_CERT_DIR replaces: kept first. */
const SYSTEM_CA_DIRS = ['/etc/ssl/certs', '/etc/pki/tls/certs'];

const isLiteral = (setting: OidcSetting): setting is string => typeof setting === 'string';

/**
 * The oauth2-proxy container for `oidc`, in front of `upstream` (Jaeger's query on loopback), and
 * the pod volumes it mounts. Throws, naming the setting, when a literal setting cannot work.
 *
 * Beyond the provider's settings, it always asks for PKCE with S256 (a provider client that
 * requires PKCE refuses logins without it, and it costs nothing where it is optional), keeps the
 * session cookie Secure and HttpOnly, and answers the query API (`/api/`) with 401 instead of a
 * redirect to the login page, accepting there a bearer token that the issuer signed for the
 * client (scripts and Grafana call the API with tokens).
 */
export function oauth2ProxySidecar(
  where: string,
  oidc: QueryOidcProps,
  upstream: string,
  image: string = TRACING_IMAGES.oauth2Proxy,
): { container: k8s.Container; volumes: k8s.Volume[] } {
  if (isLiteral(oidc.issuerUrl)) parseUrl(where, 'issuerUrl', oidc.issuerUrl);
  if (isLiteral(oidc.redirectUrl)) checkRedirectUrl(where, oidc.redirectUrl);
  if (oidc.backendLogoutUrl !== undefined && isLiteral(oidc.backendLogoutUrl))
    parseUrl(where, 'backendLogoutUrl', oidc.backendLogoutUrl);
  const proxies = oidc.trustedProxies;
  if (proxies !== undefined) {
    if (proxies.length === 0)
      throw new Error(`${where}: oidc.trustedProxies is empty; leave it out to trust no proxy's forwarded headers`);
    for (const cidr of proxies)
      if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(cidr))
        throw new Error(`${where}: oidc.trustedProxies: '${cidr}' is not a CIDR such as 10.42.0.0/16 or 10.0.0.7/32`);
  }
  // A literal setting is a flag; one from a Secret, the environment variable oauth2-proxy reads for
  // that flag. The end-session URL is the one setting a Secret may lack.
  const settings: { flag: string; value: OidcSetting; optional?: boolean }[] = [
    { flag: 'oidc-issuer-url', value: oidc.issuerUrl },
    { flag: 'client-id', value: oidc.clientId },
    { flag: 'redirect-url', value: oidc.redirectUrl },
    ...(oidc.backendLogoutUrl !== undefined
      ? [{ flag: 'backend-logout-url', value: oidc.backendLogoutUrl, optional: true }]
      : []),
  ];
  const fromSecret = (flag: string, ref: SecretKeyRef, optional?: boolean): k8s.EnvVar => ({
    name: `OAUTH2_PROXY_${flag.toUpperCase().replaceAll('-', '_')}`,
    valueFrom: { secretKeyRef: { name: ref.secretName, key: ref.key, ...(optional ? { optional } : {}) } },
  });
  const q = k8s.Quantity.fromString;
  const probe = { httpGet: { path: PING_PATH, port: k8s.IntOrString.fromString('query') }, periodSeconds: 10 };
  // The provider's CA as a file in a folder Go reads CAs from: unlike --provider-ca-file, a missing
  // key leaves the folder empty rather than failing the start, so the Secret may leave it out.
  const ca = oidc.providerCa;
  const volumes: k8s.Volume[] = ca
    ? [
        {
          name: 'provider-ca',
          secret: { secretName: ca.secretName, items: [{ key: ca.key, path: 'ca.crt' }], optional: true },
        },
      ]
    : [];
  const container: k8s.Container = {
    name: 'oauth2-proxy',
    image,
    imagePullPolicy: 'IfNotPresent',
    args: [
      '--provider=oidc',
      ...settings.filter(({ value }) => isLiteral(value)).map(({ flag, value }) => `--${flag}=${value}`),
      '--code-challenge-method=S256',
      `--upstream=${upstream}`,
      `--http-address=0.0.0.0:${OAUTH2_PROXY_PORT}`,
      ...(oidc.emailDomains ?? ['*']).map((d) => `--email-domain=${d}`),
      ...(proxies ? ['--reverse-proxy=true', ...proxies.map((cidr) => `--trusted-proxy-ip=${cidr}`)] : []),
      '--skip-provider-button=true',
      '--cookie-secure=true',
      '--cookie-httponly=true',
      // Said outright rather than left to each browser's default: the session cookie goes with
      // top-level navigations to the UI (the login's redirect back included), never with requests
      // other sites make.
      '--cookie-samesite=lax',
      '--skip-jwt-bearer-tokens=true',
      '--api-route=^/api/',
      `--ping-path=${PING_PATH}`,
    ],
    env: [
      ...settings.flatMap(({ flag, value, optional }) => (isLiteral(value) ? [] : [fromSecret(flag, value, optional)])),
      fromSecret('client-secret', oidc.clientSecret),
      fromSecret('cookie-secret', oidc.cookieSecret),
      ...(ca ? [{ name: 'SSL_CERT_DIR', value: [...SYSTEM_CA_DIRS, PROVIDER_CA_DIR].join(':') }] : []),
    ],
    ...(ca ? { volumeMounts: [{ name: 'provider-ca', mountPath: PROVIDER_CA_DIR, readOnly: true }] } : {}),
    ports: [{ name: 'query', containerPort: OAUTH2_PROXY_PORT, protocol: 'TCP' }],
    readinessProbe: probe,
    livenessProbe: { ...probe, initialDelaySeconds: 10, failureThreshold: 3 },
    resources: { requests: { cpu: q('20m'), memory: q('32Mi') }, limits: { memory: q('128Mi') } },
    securityContext: restrictedContainerSecurityContext(),
  };
  return { container, volumes };
}

/** The issuer's port, for NetworkPolicies. */
export function oidcIssuerPort(oidc: QueryOidcProps): number {
  if (oidc.issuerPort !== undefined) return oidc.issuerPort;
  return isLiteral(oidc.issuerUrl) ? urlPort(oidc.issuerUrl) : 443;
}

function parseUrl(where: string, setting: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${where}: oidc.${setting} '${value}' is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`${where}: oidc.${setting} '${value}' must be an http(s) URL`);
  return url;
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

function checkRedirectUrl(where: string, value: string): void {
  const url = parseUrl(where, 'redirectUrl', value);
  if (url.pathname !== '/oauth2/callback')
    throw new Error(
      `${where}: oidc.redirectUrl '${value}' must end in /oauth2/callback, oauth2-proxy's callback path (e.g. https://jaeger.example.com/oauth2/callback)`,
    );
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname))
    throw new Error(
      `${where}: oidc.redirectUrl '${value}' is plain http: browsers would drop the Secure session cookie and loop back to the login; serve the UI over https (or reach it on localhost through a port-forward)`,
    );
}
