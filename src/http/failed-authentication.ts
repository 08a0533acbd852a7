import type { FastifyBaseLogger } from 'fastify';
import type { AuditEntry, AuditTrail } from '../domain/accounts/audit.ts';
import { auditEntriesFor, slowDown, type FailureThrottle } from '../limits/failure-throttle.ts';
import type { Metrics } from '../metrics/metrics.ts';

/** How a counted failure must be answered: refused (429) now, or after its delay as a 401. */
export type FailureAnswer = { refused: true; retryAfterSeconds: number } | { refused: false };

/**
 * Accounts for one failed authentication, wherever HTTP took the credentials (the token
 * endpoint, `/api`, ingest URLs): spends its point against the
 * address and the client id (the throttle), writes its audit rows without holding the answer
 * (one per failure, or one per throttle once refused), counts a refusal, and waits the delay a
 * 401 has earned. The caller then answers 429 or 401 in its own shape.
 */
export async function accountFailure(
  { failures, audit, log, metrics }: { failures: FailureThrottle; audit: AuditTrail; log: FastifyBaseLogger; metrics: Metrics },
  failure: AuditEntry & { ip: string },
): Promise<FailureAnswer> {
  const outcome = await failures.failed(failure.ip, failure.clientId ?? undefined);
  for (const entry of auditEntriesFor(failure, outcome)) {
    audit.record(entry).catch((err: unknown) => log.warn({ err }, 'audit write failed'));
  }
  if (outcome.refused) {
    metrics.rateLimited('auth_failures');
    return { refused: true, retryAfterSeconds: outcome.retryAfterSeconds };
  }
  await slowDown(outcome);
  return { refused: false };
}
