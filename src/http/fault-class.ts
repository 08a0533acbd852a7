import { isStoreUnavailable } from '../store/store-errors.ts';

/**
 * What kind of fault reached an error handler, by one rule for `/api`, the dashboard and the
 * token endpoint (each answers it in its own shape: a problem document, a page, an RFC 6749
 * error). A status Fastify set in 4xx is the client's, whatever else the error says: a client
 * that drops its connection mid-body raises ECONNRESET, which must not read (and be logged) as a
 * store outage anyone could fake. A store fault means "retry shortly"; anything else is ours.
 */
export type FaultClass = { kind: 'client'; status: number } | { kind: 'unavailable' } | { kind: 'server' };

/** Seconds an answer to a store outage asks the client to wait (`Retry-After`). */
export const UNAVAILABLE_RETRY_SECONDS = 5;

export function faultClass(error: unknown): FaultClass {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return { kind: 'client', status };
  return isStoreUnavailable(error) ? { kind: 'unavailable' } : { kind: 'server' };
}
