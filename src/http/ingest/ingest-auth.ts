import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../../domain/accounts/accounts.ts';
import type { AuditTrail } from '../../domain/accounts/audit.ts';
import type { EventIntake } from '../../domain/events/event-intake.ts';
import type { IngestUrls, IngestVerdict } from '../../domain/events/ingest-urls.ts';
import type { FailureThrottle } from '../../limits/failure-throttle.ts';
import type { Metrics } from '../../metrics/metrics.ts';
import { accountFailure } from '../failed-authentication.ts';
import { problem, sendProblem } from '../problem.ts';


/** The route pattern audited for a failure: never the path as sent, which holds the secret. */
const AUDITED_PATH = '/ingest/{secret}';

export interface IngestGateOptions {
  ingestUrls: IngestUrls;
  failures: FailureThrottle;
  audit: AuditTrail;
  metrics: Metrics;
}

/** A refused ingest secret: why, and whose URL it named if any (for the audit trail only). */
export type IngestRefusal = Extract<IngestVerdict, { ok: false }>;

/**
 * Authentication by an ingest URL's secret (docs/api.md §11). The secret in the path is the
 * whole credential, so a refusal is counted by the same failure throttle as a wrong client
 * secret or token (docs/api.md §2): an address that keeps guessing is slowed, then refused 429.
 */
export function ingestGate({ ingestUrls, failures, audit, metrics }: IngestGateOptions) {
  /**
   * Answers a refused secret: 404 `not_found`, one answer for a secret never issued, revoked,
   * or of a disabled account, so that nothing tells whether a URL ever existed. Not 401: a
   * webhook client has no credentials to offer in answer to a challenge.
   */
  async function refuse(request: FastifyRequest, reply: FastifyReply, refusal: IngestRefusal): Promise<FastifyReply> {
    const answer = await accountFailure(
      { failures, audit, log: request.log, metrics },
      {
        action: 'api.auth_failed',
        actor: 'anonymous',
        accountId: refusal.accountId ?? null,
        ip: request.ip,
        detail: { reason: refusal.reason, path: AUDITED_PATH, ...(refusal.ingestUrlId ? { ingest_url_id: refusal.ingestUrlId } : {}) },
      },
    );
    if (answer.refused) {
      reply.header('retry-after', answer.retryAfterSeconds);
      return sendProblem(reply, problem('rate_limited', 'too many failed authentications; retry later'));
    }
    return sendProblem(reply, problem('not_found', 'no such ingest URL'));
  }

  /** The account a secret delivers to, or undefined once the refusal is answered. */
  async function admit(request: FastifyRequest, reply: FastifyReply, secret: string): Promise<Account | undefined> {
    const verdict = await ingestUrls.authenticate(secret);
    if (verdict.ok) return verdict.account;
    await refuse(request, reply, verdict);
    return undefined;
  }

  return { admit, refuse };
}

/** The gate's interface, for the scope and the bad-URL answer. */
export type IngestGate = ReturnType<typeof ingestGate>;

/**
 * The `/ingest` onRequest hook: authenticates by the secret before the body is read, then
 * refuses an account whose plan may not submit (403 `plan_not_allowed`), in the order of
 * `POST /api/events` (docs/api.md §3, §5). Unmatched paths are the not-found handler's.
 */
export function ingestAuthHook(gate: IngestGate, intake: EventIntake) {
  return async function authenticateIngest(request: FastifyRequest, reply: FastifyReply) {
    if (request.is404) return;
    const { secret } = request.params as { secret?: string };
    const account = await gate.admit(request, reply, secret ?? '');
    if (!account) return reply;
    await intake.assertMaySubmit(account);
    request.ingestAccount = account;
  };
}
