/** The API server's refusals, as the operator's runtime tells them apart (client-go's apierrors). */

/** The API server's `Status` body of a failed request. */
interface Status {
  kind?: string;
  message?: string;
  reason?: string;
  code?: number;
}

/** A request the API server refused (or could not be sent: code 0). The message is the server's own. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;

  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.name = 'ApiError';
  }
}

export const isNotFound = (e: unknown): boolean => e instanceof ApiError && e.code === 404;
/** 409 of any kind: a stale resourceVersion (Conflict) or a create of an existing name (AlreadyExists). */
export const isConflict = (e: unknown): boolean => e instanceof ApiError && e.code === 409;
export const isAlreadyExists = (e: unknown): boolean =>
  e instanceof ApiError && e.code === 409 && e.reason === 'AlreadyExists';
export const isGone = (e: unknown): boolean => e instanceof ApiError && e.code === 410;
/** 403: RBAC does not allow the request; retrying helps only once someone grants it. */
export const isForbidden = (e: unknown): boolean => e instanceof ApiError && e.code === 403;

/** The ApiError of a failed request, from the API server's Status body when it sent one. */
export function statusError(code: number, body: string, what: string): ApiError {
  let status: Status = {};
  try {
    status = JSON.parse(body) as Status;
  } catch {
    // Not a Status (a proxy in between?): fall back to the HTTP code.
  }
  const reason = status.reason ?? String(code);
  return new ApiError(code, reason, status.message ? status.message : `${what}: HTTP ${code}`);
}
