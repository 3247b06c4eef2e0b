import { subscribe } from 'node:diagnostics_channel';
import type { ClientHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import { Agent, buildConnector } from 'undici';

/**
 * The connection pool the operator talks to the API server through, with client-go's HTTP/2 health
 * check. A connection can die without a close (a dropped NAT entry, a partitioned node, a black-holed
 * route): nothing arrives, nothing fails, and every stream on it (each watch, every request, all
 * sharing the one HTTP/2 connection) waits on it. client-go sends a PING after ReadIdleTimeout (30 s)
 * without a frame and closes the connection when no ack comes within PingTimeout (15 s). undici sends
 * PINGs on a timer but does not act on a missing ack, so here undici pings every `pingTimeoutMs` and a
 * watchdog closes an HTTP/2 connection that has read nothing for `readIdleMs + pingTimeoutMs`: a live
 * one reads at least an ack per ping. Its streams then fail at once, and the informers watch again on a
 * new connection, instead of waiting for their inactivity timeout.
 */

export interface ConnectionHealth {
  /** Time without a frame before a live connection would have been pinged. */
  readonly readIdleMs: number;
  /** Time a PING's ack may take. */
  readonly pingTimeoutMs: number;
}

/** client-go's values (k8s.io/client-go/transport: ReadIdleTimeout 30 s, PingTimeout 15 s). */
export const CLIENT_GO_HEALTH: ConnectionHealth = { readIdleMs: 30_000, pingTimeoutMs: 15_000 };

/** TLS settings of the pool, as kubeconfig gives them (CA, client certificate and key, server name). */
export type TlsOptions = Pick<
  ConnectionOptions,
  'ca' | 'cert' | 'key' | 'pfx' | 'passphrase' | 'rejectUnauthorized' | 'servername'
>;

/**
 * An undici Agent (HTTP/2 where the server offers it, as the API server does, unless `http2` is
 * false) whose HTTP/2 connections are closed once dead. `onDead` is told each time, with how long
 * the connection was silent. HTTP/1.1 connections are not pinged: a dead one fails its request at
 * the request timeout, and a watch on it at the informer's inactivity timeout.
 */
/**
 * Every HTTP/2 stream this process opens gets an 'error' listener that ignores what it hears. When the
 * API server goes away mid-stream (a restart ends its socket), Node destroys the session and emits the
 * error on each of its streams; undici handles it on the streams it is using, but one it has let go
 * of can still be there without a listener, and Node turns an unheard 'error' into an uncaught
 * exception that ends the operator (seen in the API server restart chaos run: `SocketError: other
 * side closed` from undici's onHttp2SocketEnd, "Emitted 'error' event on ClientHttp2Stream"). The
 * error of a request in flight still reaches undici's own listener and fails that request; this one
 * only keeps a late copy from crashing the process. Subscribed once, when the first Agent is made.
 */
let streamErrorSink = false;
function sinkLateStreamErrors(): void {
  if (streamErrorSink) return;
  streamErrorSink = true;
  subscribe('http2.client.stream.created', (message) => {
    (message as { stream: ClientHttp2Stream }).stream.on('error', () => {});
  });
}

export function apiServerAgent(
  tls: TlsOptions,
  health: ConnectionHealth = CLIENT_GO_HEALTH,
  onDead?: (silentMs: number) => void,
  http2 = true,
): Agent {
  if (http2) sinkLateStreamErrors();
  const connect = buildConnector({ ...tls, allowH2: http2 } as buildConnector.BuildOptions);
  return new Agent({
    allowH2: http2,
    h2Options: { pingInterval: health.pingTimeoutMs },
    connect: (options, callback) =>
      connect(options, (error, socket) => {
        if (socket) closeWhenSilent(socket as Socket, health, onDead);
        // biome-ignore lint/suspicious/noExplicitAny: undici's callback takes (null, socket) or (error, null).
        (callback as any)(error, socket);
      }),
  });
}

/** Destroys `socket` once it has read nothing for readIdleMs + pingTimeoutMs (HTTP/2 only: only it is pinged). */
function closeWhenSilent(socket: Socket, health: ConnectionHealth, onDead?: (silentMs: number) => void): void {
  if ((socket as TLSSocket).alpnProtocol !== 'h2') return;
  const limit = health.readIdleMs + health.pingTimeoutMs;
  let bytes = socket.bytesRead;
  let since = performance.now();
  const timer = setInterval(
    () => {
      const now = performance.now();
      if (socket.bytesRead !== bytes) {
        bytes = socket.bytesRead;
        since = now;
        return;
      }
      if (now - since < limit) return;
      clearInterval(timer);
      onDead?.(now - since);
      socket.destroy(
        new Error(
          `no frame from the API server for ${Math.round((now - since) / 1000)} s, not even a PING ack: connection closed`,
        ),
      );
    },
    Math.max(10, Math.min(health.readIdleMs, health.pingTimeoutMs) / 3),
  ).unref();
  socket.once('close', () => clearInterval(timer));
}
