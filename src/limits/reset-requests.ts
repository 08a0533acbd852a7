import { MailRequests, type MailRequestSettings } from './mail-requests.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How often "forgot your password" may mail a link: each request sends mail to an address on
 * the word of whoever asks, so it is bounded per address asked for (3 an hour: enough for a
 * person who lost a mail, too few to flood an inbox) and per requesting address (20 an hour).
 */
export const DEFAULT_RESET_REQUESTS: MailRequestSettings = { perEmail: 3, perSource: 20, windowSeconds: 3600 };

/** Counts password-reset requests, shared between instances like the sign-in locks. */
export class ResetRequests {
  private readonly requests: MailRequests;

  constructor(factory: LimiterFactory, settings: MailRequestSettings = DEFAULT_RESET_REQUESTS) {
    this.requests = new MailRequests(factory, { email: 'tollwatch:reset:email', source: 'tollwatch:reset:address' }, settings);
  }

  /** Spends one request for `email` from `ip`: allowed, or refused until `retryAfterSeconds`. */
  attempt(ip: string, email: string): ReturnType<MailRequests['attempt']> {
    return this.requests.attempt(ip, email);
  }
}
