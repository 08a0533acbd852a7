import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { connectionNetwork } from '../domain/address-ranges.ts';
import { canonicalIpAddress } from '../domain/ip-address.ts';
import { spend } from './failure-throttle.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How often open sign-up may mail: each sign-up sends mail to an address on the word of whoever
 * asks, so it is bounded per address asked for (3 an hour: enough for a person who lost a mail,
 * too few to flood an inbox) and per network asking (10 an hour from one IPv4 /24 or IPv6 /64,
 * since a person who owns one address of such a network can usually use them all).
 */
export interface SignUpRequestSettings {
  perEmail: number;
  perNetwork: number;
  windowSeconds: number;
}

export const DEFAULT_SIGN_UP_REQUESTS: SignUpRequestSettings = { perEmail: 3, perNetwork: 10, windowSeconds: 3600 };

/** Counts sign-up requests, shared between instances like the sign-in locks. */
export class SignUpRequests {
  private readonly email: RateLimiterAbstract;
  private readonly network: RateLimiterAbstract;
  private readonly settings: SignUpRequestSettings;

  constructor(factory: LimiterFactory, settings: SignUpRequestSettings = DEFAULT_SIGN_UP_REQUESTS) {
    this.settings = settings;
    this.email = factory({ keyPrefix: 'tollwatch:signup:email', points: settings.perEmail, duration: settings.windowSeconds });
    this.network = factory({ keyPrefix: 'tollwatch:signup:network', points: settings.perNetwork, duration: settings.windowSeconds });
  }

  /** Spends one sign-up for `email` from `ip`: allowed, or refused until `retryAfterSeconds`. */
  async attempt(ip: string, email: string): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }> {
    const [byEmail, byNetwork] = await Promise.all([spend(this.email, email.trim().toLowerCase().slice(0, 320)), spend(this.network, signUpNetwork(ip))]);
    const over = [
      { res: byEmail, limit: this.settings.perEmail },
      { res: byNetwork, limit: this.settings.perNetwork },
    ].filter((c) => c.res.consumedPoints > c.limit);
    if (over.length === 0) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, ...over.map((c) => Math.ceil(c.res.msBeforeNext / 1000))) };
  }
}

/** The network a sign-up is counted under: an IPv4 address's /24, an IPv6 address's /64. */
export function signUpNetwork(address: string): string {
  const canonical = canonicalIpAddress(address);
  if (!canonical || canonical.includes(':')) return connectionNetwork(address);
  return `${canonical.split('.').slice(0, 3).join('.')}.0/24`;
}
