import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { spend } from './failure-throttle.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/** How many mails an anonymous form may send: per address mailed, and per place asking. */
export interface MailRequestSettings {
  perEmail: number;
  perSource: number;
  windowSeconds: number;
}

/**
 * Counts the requests of a form that mails an address on the word of whoever asks ("forgot your
 * password", sign-up): bounded per address mailed, so nobody floods an inbox, and per source
 * asking. Shared between instances like the sign-in locks.
 */
export class MailRequests {
  private readonly email: RateLimiterAbstract;
  private readonly source: RateLimiterAbstract;
  private readonly settings: MailRequestSettings;

  /** `counters`: the shared counters' names, e.g. `tollwatch:reset:email` and `tollwatch:reset:address`. */
  constructor(factory: LimiterFactory, counters: { email: string; source: string }, settings: MailRequestSettings) {
    this.settings = settings;
    this.email = factory({ keyPrefix: counters.email, points: settings.perEmail, duration: settings.windowSeconds });
    this.source = factory({ keyPrefix: counters.source, points: settings.perSource, duration: settings.windowSeconds });
  }

  /** Spends one request for `email` from `source`: allowed, or refused until `retryAfterSeconds`. */
  async attempt(source: string, email: string): Promise<RequestVerdict> {
    const [byEmail, bySource] = await Promise.all([spend(this.email, email.trim().toLowerCase().slice(0, 320)), spend(this.source, source)]);
    return verdictOf([
      { res: byEmail, limit: this.settings.perEmail },
      { res: bySource, limit: this.settings.perSource },
    ]);
  }
}

/** Whether a request may go on, or until when it is refused. */
export type RequestVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** Allowed when every counter spent is within its limit; else refused until the last of those over it frees a point. */
export function verdictOf(counted: Array<{ res: RateLimiterRes; limit: number }>): RequestVerdict {
  const over = counted.filter((c) => c.res.consumedPoints > c.limit);
  if (over.length === 0) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, ...over.map((c) => Math.ceil(c.res.msBeforeNext / 1000))) };
}
