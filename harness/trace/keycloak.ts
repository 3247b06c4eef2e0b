// A real Keycloak for the trace tests: the OIDC provider that oauth2-proxy puts in front of Jaeger's
// UI and query API, a local process run by scripts/keycloak.sh (no containers). Its realms are
// scripts/keycloak/realm-*.json; the secrets are random per folder (its credentials.json).
import { readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { freePort } from '../process/ports.ts';
import { runScript } from '../process/processes.ts';

/** A user who can log in, and the realm (issuer) that knows them. */
export interface KeycloakUser {
  readonly realm: string;
  readonly username: string;
  readonly email: string;
  readonly password: string;
}

/** A running server. */
export interface Keycloak {
  /** What `scripts/keycloak.sh start` printed, for keycloakAt in another process. */
  readonly started: KeycloakStarted;
  /** http://ADDRESS:PORT, or https://ADDRESS[:HTTPS_PORT] when it serves HTTPS (the issuer's base). */
  readonly url: string;
  /** The PEM of the CA that signed its HTTPS certificate, when it serves HTTPS. */
  readonly ca?: string;
  /** The issuer oauth2-proxy is configured with (`--oidc-issuer-url`): the realm website-stack. */
  readonly issuerUrl: string;
  /** A second issuer in the same server (the realm other), for tokens oauth2-proxy must refuse. */
  readonly otherIssuerUrl: string;
  /** The confidential client oauth2-proxy logs users in as (standard flow, PKCE S256). */
  readonly clientId: string;
  readonly clientSecret: string;
  /**
   * allowed: alice@example.com, outside: mallory@example.org (both of the issuer, emails verified),
   * otherIssuer: eve@example.com of the other issuer.
   */
  readonly users: {
    readonly allowed: KeycloakUser;
    readonly outside: KeycloakUser;
    readonly otherIssuer: KeycloakUser;
  };
  readonly adminConsoleUrl: string;
  /** The admin of the master realm (the admin console's login). */
  readonly admin: { readonly username: string; readonly password: string };
  /**
   * A bearer token for `user`: the access token of a password grant by the test-only public client
   * (jaeger-cli) of the user's realm, with audience "jaeger" as oauth2-proxy requires.
   */
  token(user: KeycloakUser): Promise<string>;
  /** Stops the server (SIGTERM, then SIGKILL); its data stays in its folder. */
  stop(): Promise<void>;
}

/** What `scripts/keycloak.sh start` prints: enough to reach a running server from another process (keycloakAt). */
export interface KeycloakStarted {
  url: string;
  issuerUrl: string;
  otherIssuerUrl: string;
  clientId: string;
  tokenClientId: string;
  credentialsFile: string;
  adminConsoleUrl: string;
  /** The CA of its HTTPS certificate; null over plain HTTP. */
  caFile: string | null;
}

/** DIR/credentials.json. */
interface Credentials {
  admin: { username: string; password: string };
  clientSecret: string;
  users: Keycloak['users'];
}

export interface KeycloakOptions {
  /**
   * The client's allowed redirect URIs (oauth2-proxy's `--redirect-url`). Default:
   * http://127.0.0.1/oauth2/callback, which Keycloak matches on any loopback port (RFC 8252).
   */
  readonly redirectUris?: readonly string[];
  /** The HTTP port; a free one when not given. */
  readonly port?: number;
  /** The address it listens on. @default '127.0.0.1' */
  readonly address?: string;
  /**
   * Serve HTTPS on this port of `address` too, with a certificate of a CA of its own, and issue
   * tokens as https://address[:httpsPort] (as a provider in production does).
   * @default plain HTTP only
   */
  readonly httpsPort?: number;
}

/**
 * Starts Keycloak with its database and logs under `dir` (created if missing) and resolves once it
 * is ready. The first call installs Keycloak (Maven Central, then a one-time build; cached
 * afterwards); the first start in a folder creates the database and imports the realms (a minute
 * or two), later ones reuse it.
 */
export async function startKeycloak(dir: string, options: KeycloakOptions = {}): Promise<Keycloak> {
  const port = options.port ?? (await freePort());
  const env = { ...process.env };
  if (options.redirectUris) {
    if (options.redirectUris.length === 0 || options.redirectUris.some((uri) => /\s/.test(uri) || uri === ''))
      throw new Error(`redirectUris must be non-empty URIs without spaces: ${JSON.stringify(options.redirectUris)}`);
    env.KEYCLOAK_REDIRECT_URIS = options.redirectUris.join(' ');
  }
  if (options.httpsPort !== undefined) env.KEYCLOAK_HTTPS_PORT = String(options.httpsPort);
  const args = ['start', dir, String(port), ...(options.address ? [options.address] : [])];
  const started = JSON.parse(await runScript('keycloak', args, env)) as KeycloakStarted;
  return {
    ...(await keycloakAt(started)),
    stop: async () => {
      await runScript('keycloak', ['stop', dir]);
    },
  };
}

/** The server `started` describes, started by another process (the trace project's global setup). */
export async function keycloakAt(started: KeycloakStarted): Promise<Omit<Keycloak, 'stop'>> {
  const credentials = JSON.parse(await readFile(started.credentialsFile, 'utf8')) as Credentials;
  const ca = started.caFile === null ? undefined : await readFile(started.caFile, 'utf8');
  return {
    started,
    url: started.url,
    ...(ca ? { ca } : {}),
    issuerUrl: started.issuerUrl,
    otherIssuerUrl: started.otherIssuerUrl,
    clientId: started.clientId,
    clientSecret: credentials.clientSecret,
    users: credentials.users,
    adminConsoleUrl: started.adminConsoleUrl,
    admin: credentials.admin,
    token: async (user) => {
      const { status, text } = await postForm(
        `${started.url}/realms/${user.realm}/protocol/openid-connect/token`,
        {
          grant_type: 'password',
          client_id: started.tokenClientId,
          username: user.username,
          password: user.password,
          scope: 'openid',
        },
        ca,
      );
      const body = JSON.parse(text) as { access_token?: string; error?: string; error_description?: string };
      if (status !== 200 || !body.access_token)
        throw new Error(
          `no token for ${user.username} from ${started.url}/realms/${user.realm} (${status}): ${body.error ?? ''} ${body.error_description ?? ''}`,
        );
      return body.access_token;
    },
  };
}

/** A form POST, over HTTPS verified against `ca` when given (fetch cannot be given a CA per request). */
function postForm(url: string, form: Record<string, string>, ca?: string): Promise<{ status: number; text: string }> {
  const body = new URLSearchParams(form).toString();
  const send = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, ...(ca ? { ca } : {}) },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
