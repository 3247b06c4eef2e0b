// A real Keycloak for the trace tests: the OIDC provider that oauth2-proxy puts in front of Jaeger's
// UI and query API, a local process run by scripts/keycloak.sh (no containers). Its realms are
// scripts/keycloak/realm-*.json; the secrets are random per folder (its credentials.json).
import { readFile } from 'node:fs/promises';
import { freePort } from '../support/ports.ts';
import { runScript } from '../support/processes.ts';

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
  /** http://127.0.0.1:PORT */
  readonly url: string;
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
  /** The HTTP port on 127.0.0.1; a free one when not given. */
  readonly port?: number;
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
  const started = JSON.parse(await runScript('keycloak', ['start', dir, String(port)], env)) as KeycloakStarted;
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
  return {
    started,
    url: started.url,
    issuerUrl: started.issuerUrl,
    otherIssuerUrl: started.otherIssuerUrl,
    clientId: started.clientId,
    clientSecret: credentials.clientSecret,
    users: credentials.users,
    adminConsoleUrl: started.adminConsoleUrl,
    admin: credentials.admin,
    token: async (user) => {
      const response = await fetch(`${started.url}/realms/${user.realm}/protocol/openid-connect/token`, {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'password',
          client_id: started.tokenClientId,
          username: user.username,
          password: user.password,
          scope: 'openid',
        }),
      });
      const body = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!response.ok || !body.access_token)
        throw new Error(
          `no token for ${user.username} from ${started.url}/realms/${user.realm} (${response.status}): ${body.error ?? ''} ${body.error_description ?? ''}`,
        );
      return body.access_token;
    },
  };
}
