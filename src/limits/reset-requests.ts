import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { spend } from './failure-throttle.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How often "forgot your password" may mail a link: each request sends mail to an address on
 * the word of whoever asks, so it is bounded per address asked for (3 an hour: enough for a
 * person who lost a mail, too few to flood an inbox) and per requesting address (20 an hour).
 */
export interface ResetRequestSettings {
  perEmail: number;
  perAddress: number;
  windowSeconds: number;
}

export const DEFAULT_RESET_REQUESTS: ResetRequestSettings = { perEmail: 3, perAddress: 20, windowSeconds: 3600 };

/** Counts password-reset requests, shared between instances like the sign-in locks. */
export class ResetRequests {
  private readonly email: RateLimiterAbstract;
  private readonly address: RateLimiterAbstract;
  private readonly settings: ResetRequestSettings;

  constructor(factory: LimiterFactory, settings: ResetRequestSettings = DEFAULT_RESET_REQUESTS) {
    this.settings = settings;
    this.email = factory({ keyPrefix: 'tollwatch:reset:email', points: settings.perEmail, duration: settings.windowSeconds });
    this.address = factory({ keyPrefix: 'tollwatch:reset:address', points: settings.perAddress, duration: settings.windowSeconds });
  }

  /** Spends one request for `email` from `ip`: allowed, or refused until `retryAfterSeconds`. */
  async attempt(ip: string, email: string): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
    const [byEmail, byAddress] = await Promise.all([spend(this.email, email.trim().toLowerCase()), spend(this.address, ip)]);
    const over = [
      { res: byEmail, limit: this.settings.perEmail },
      { res: byAddress, limit: this.settings.perAddress },
    ].filter((c) => c.res.consumedPoints > c.limit);
    if (over.length === 0) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, ...over.map((c) => Math.ceil(c.res.msBeforeNext / 1000))) };
  }
}
