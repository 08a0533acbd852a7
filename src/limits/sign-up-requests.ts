import { connectionNetwork } from '../domain/address-ranges.ts';
import { canonicalIpAddress } from '../domain/ip-address.ts';
import { MailRequests, type MailRequestSettings } from './mail-requests.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How often open sign-up may mail: each sign-up sends mail to an address on the word of whoever
 * asks, so it is bounded per address asked for (3 an hour: enough for a person who lost a mail,
 * too few to flood an inbox) and per network asking (10 an hour from one IPv4 /24 or IPv6 /64,
 * since whoever holds one address of such a network can usually use them all).
 */
export const DEFAULT_SIGN_UP_REQUESTS: MailRequestSettings = { perEmail: 3, perSource: 10, windowSeconds: 3600 };

/** Counts sign-up requests, shared between instances like the sign-in locks. */
export class SignUpRequests {
  private readonly requests: MailRequests;

  constructor(factory: LimiterFactory, settings: MailRequestSettings = DEFAULT_SIGN_UP_REQUESTS) {
    this.requests = new MailRequests(factory, { email: 'tollwatch:signup:email', source: 'tollwatch:signup:network' }, settings);
  }

  /** Spends one sign-up for `email` from `ip`'s network: allowed, or refused until `retryAfterSeconds`. */
  attempt(ip: string, email: string): ReturnType<MailRequests['attempt']> {
    return this.requests.attempt(signUpNetwork(ip), email);
  }
}

/** The network a sign-up is counted under: an IPv4 address's /24, an IPv6 address's /64. */
export function signUpNetwork(address: string): string {
  const canonical = canonicalIpAddress(address);
  if (!canonical || canonical.includes(':')) return connectionNetwork(address);
  return `${canonical.split('.').slice(0, 3).join('.')}.0/24`;
}
