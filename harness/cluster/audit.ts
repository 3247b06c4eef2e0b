// The API server's audit log (one JSON event per line), as the tests and the benchmark read it:
// what a controller sent, counted from outside it, whatever it is written in.
import { open, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/**
 * The one audit policy of the tests' and the benchmark's clusters (scripts/cluster.sh's
 * WEBSITE_STACK_CLUSTER_AUDIT_POLICY): every ServiceAccount's requests but kube-system's, and Lease
 * writes with their body.
 */
export const AUDIT_POLICY = fileURLToPath(new URL('./audit-policy.yaml', import.meta.url));

/** One request as the audit log records it (the fields read here). */
export interface AuditEvent {
  readonly stage?: string;
  readonly verb: string;
  readonly user?: { readonly username?: string };
  readonly userAgent?: string;
  readonly objectRef?: {
    readonly resource?: string;
    readonly subresource?: string;
    readonly name?: string;
    readonly namespace?: string;
  };
  readonly responseStatus?: { readonly code?: number };
  readonly requestReceivedTimestamp?: string;
  readonly stageTimestamp?: string;
  /** With a policy logging a Lease's writes at Request level: the Lease written. */
  readonly requestObject?: {
    readonly spec?: { readonly holderIdentity?: string; readonly leaseDurationSeconds?: number };
  };
}

/** The log's size now, in bytes: where a later read starts (0 before the first event). */
export async function auditLogSize(path: string): Promise<number> {
  return (await stat(path).catch(() => ({ size: 0 }))).size;
}

/**
 * The events logged in `path` between byte offsets `from` and `to` (the end by default) whose line
 * contains `needle` (a user name, a user agent); a last line still being written is left out.
 */
export async function auditEvents(path: string, needle: string, from: number, to?: number): Promise<AuditEvent[]> {
  const end = to ?? (await auditLogSize(path));
  if (end <= from) return [];
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(end - from);
    await file.read(buffer, 0, buffer.length, from);
    return buffer
      .toString('utf8')
      .split('\n')
      .filter((line) => line.includes(needle))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as AuditEvent];
        } catch {
          return [];
        }
      });
  } finally {
    await file.close();
  }
}
