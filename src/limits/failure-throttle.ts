import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { AuditEntry } from '../domain/accounts/audit.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/** How many failed authentications are tolerated, and how they are slowed before that. */
export interface ThrottleSettings {
  /** Failures from one address within the window answered 401; later ones are refused (429). */
  perAddress: number;
  /** Failures naming one client id within the window answered 401; later ones are refused. */
  perClient: number;
  windowSeconds: number;
  /** Failures from one address answered at full speed; later ones are delayed. */
  freeFailures: number;
  /** Added delay per failure beyond the free ones, capped at maxDelayMs. */
  delayStepMs: number;
  maxDelayMs: number;
}

export const DEFAULT_THROTTLE: ThrottleSettings = {
  perAddress: 30,
  perClient: 100,
  windowSeconds: 900,
  freeFailures: 5,
  delayStepMs: 200,
  maxDelayMs: 2000,
};

/** The counters a failure is charged to. */
export type ThrottleKey = 'address' | 'client';

/** What one counted failure earns. */
export type FailureOutcome =
  | {
      refused: false;
      /** How long to hold the 401: nothing for the first few failures, then more for each. */
      delayMs: number;
    }
  | {
      refused: true;
      /** Seconds until every counter that refuses this failure has reset. */
      retryAfterSeconds: number;
      /** Counters this very failure took over their limit: refusal for that key and window starts here. */
      refusalStarted: ThrottleKey[];
    };

/**
 * Slows, then refuses, repeated failed authentication from one address or naming one client id
 * (docs/api.md §2). It is consulted only after credentials failed: valid credentials are honoured
 * whatever anyone else's failures, so neither a noisy neighbour behind the same proxy nor
 * someone who knows a client id can lock a client out. The per-client bound is higher than the
 * per-address one because guessing a 256-bit secret is hopeless anyway; it only caps the noise.
 */
export class FailureThrottle {
  private readonly byAddress: RateLimiterAbstract;
  private readonly byClient: RateLimiterAbstract;
  private readonly settings: ThrottleSettings;

  constructor(factory: LimiterFactory, settings: ThrottleSettings = DEFAULT_THROTTLE) {
    this.settings = settings;
    this.byAddress = factory({ keyPrefix: 'tollwatch:authfail:ip', points: settings.perAddress, duration: settings.windowSeconds });
    this.byClient = factory({ keyPrefix: 'tollwatch:authfail:client', points: settings.perClient, duration: settings.windowSeconds });
  }

  /**
   * Counts a failure and says whether it is refused. The point is spent first, in one atomic
   * step per counter, so concurrent failures cannot all see room under the limit: exactly
   * `perAddress` failures from an address are answered in a window, however many arrive at once.
   * A failure that is not refused carries the delay its answer must wait (see `slowDown`).
   */
  async failed(ip: string, clientId: string | undefined): Promise<FailureOutcome> {
    const [address, client] = await Promise.all([spend(this.byAddress, ip), clientId ? spend(this.byClient, clientId) : undefined]);
    const over = [
      { key: 'address' as const, res: address, limit: this.settings.perAddress },
      { key: 'client' as const, res: client, limit: this.settings.perClient },
    ].filter((c): c is { key: ThrottleKey; res: RateLimiterRes; limit: number } => c.res !== undefined && c.res.consumedPoints > c.limit);
    if (over.length > 0) {
      return {
        refused: true,
        retryAfterSeconds: Math.max(...over.map((c) => Math.max(1, Math.ceil(c.res.msBeforeNext / 1000)))),
        // A counter only grows within its window, so one failure sees limit + 1 (one per store:
        // should Redis fail over to its in-process insurance, each counts for itself).
        refusalStarted: over.filter((c) => c.res.consumedPoints === c.limit + 1).map((c) => c.key),
      };
    }
    const beyond = address.consumedPoints - this.settings.freeFailures;
    return { refused: false, delayMs: beyond > 0 ? Math.min(this.settings.maxDelayMs, beyond * this.settings.delayStepMs) : 0 };
  }
}

/** Waits the delay a failure that is answered (401) has earned: the slowing of docs/api.md §2. */
export async function slowDown(outcome: { delayMs: number } | { refused: true }): Promise<void> {
  if ('delayMs' in outcome && outcome.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, outcome.delayMs));
}

/**
 * The audit rows one failure earns: the failure itself while it is answered 401; once refused,
 * one `auth.throttled` row for each key whose refusal it started, and nothing for the refused
 * requests after it. A client polling with a revoked token writes at most its allowance of
 * failure rows and one throttle row per window, not a row per request.
 */
export function auditEntriesFor(failure: AuditEntry, outcome: FailureOutcome): AuditEntry[] {
  if (!outcome.refused) return [failure];
  return outcome.refusalStarted.map((key) => ({
    action: 'auth.throttled',
    actor: failure.actor,
    ip: failure.ip ?? null,
    // The address row is about the address: whichever client id came with it says nothing.
    clientId: key === 'client' ? (failure.clientId ?? null) : null,
    accountId: key === 'client' ? (failure.accountId ?? null) : null,
    detail: { key: key === 'client' ? 'client_id' : 'address', after: failure.action, retry_after: outcome.retryAfterSeconds },
  }));
}

/** Spends one point; a counter over its limit answers with its state rather than throwing. */
export async function spend(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes> {
  try {
    return await limiter.consume(key, 1);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return rejection;
    throw rejection;
  }
}
