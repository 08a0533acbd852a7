import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { canonicalIpAddress } from '../domain/ip-address.ts';
import { spend } from './failure-throttle.ts';
import { verdictOf, type RequestVerdict } from './mail-requests.ts';
import type { LimiterFactory } from './plan-limiter.ts';
import { signUpNetwork } from './sign-up-requests.ts';

/** How many single sign-on attempts may begin, per client address and per network, in a window. */
export interface OidcAttemptSettings {
  perAddress: number;
  perNetwork: number;
  windowSeconds: number;
}

/**
 * Each attempt begun stores a row (table `oidc_attempts`) for its 10 minutes, asked by anyone
 * without signing in, so beginning is bounded over the same 10 minutes: the table then holds at
 * most `perNetwork` live rows per network whoever asks. The bounds are generous because the
 * people they would stop are real: one sign-in is one attempt (two with a retry), and a whole
 * office may come through one NAT address at nine in the morning; 60 per address lets a few dozen
 * people in at once. 200 per network (an IPv4 /24, an IPv6 /64, counted as sign-ups are: whoever
 * holds one address of such a network can usually use them all) bounds someone cycling addresses.
 */
export const DEFAULT_OIDC_ATTEMPTS: OidcAttemptSettings = { perAddress: 60, perNetwork: 200, windowSeconds: 600 };

/** Counts single sign-on attempts begun, shared between instances like the sign-in locks. */
export class OidcAttemptRequests {
  private readonly address: RateLimiterAbstract;
  private readonly network: RateLimiterAbstract;
  private readonly settings: OidcAttemptSettings;

  constructor(factory: LimiterFactory, settings: OidcAttemptSettings = DEFAULT_OIDC_ATTEMPTS) {
    this.settings = settings;
    this.address = factory({ keyPrefix: 'tollwatch:oidc:address', points: settings.perAddress, duration: settings.windowSeconds });
    this.network = factory({ keyPrefix: 'tollwatch:oidc:network', points: settings.perNetwork, duration: settings.windowSeconds });
  }

  /** Spends one attempt from `ip` and its network: allowed, or refused until `retryAfterSeconds`. */
  async attempt(ip: string): Promise<RequestVerdict> {
    const [byAddress, byNetwork] = await Promise.all([spend(this.address, canonicalIpAddress(ip) ?? ip), spend(this.network, signUpNetwork(ip))]);
    return verdictOf([
      { res: byAddress, limit: this.settings.perAddress },
      { res: byNetwork, limit: this.settings.perNetwork },
    ]);
  }
}
