import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LimiterFactory } from './plan-limiter.ts';

/** How many failed authentications are tolerated, and how they are slowed before that. */
export interface ThrottleSettings {
  /** Failures from one address within the window before it is refused. */
  perAddress: number;
  /** Failures naming one client id within the window before that id is refused. */
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

/**
 * Slows, then refuses, repeated failed authentication from one address or against one client
 * id (CONTRACT §2). The per-client bound is higher than the per-address one: an attacker who
 * knows a client id must not lock its owner out cheaply, but guessing a 256-bit secret is
 * hopeless anyway, so it only caps the noise.
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

  /** Seconds to wait when the address or client id is refused now; undefined when it may try. */
  async refusal(ip: string, clientId: string | undefined): Promise<number | undefined> {
    const [address, client] = await Promise.all([
      this.byAddress.get(ip),
      clientId ? this.byClient.get(clientId) : Promise.resolve(null),
    ]);
    const over = [
      address && address.consumedPoints >= this.settings.perAddress ? address : undefined,
      client && client.consumedPoints >= this.settings.perClient ? client : undefined,
    ].filter((r): r is RateLimiterRes => r !== undefined);
    if (over.length === 0) return undefined;
    return Math.max(...over.map((r) => Math.max(1, Math.ceil(r.msBeforeNext / 1000))));
  }

  /** Counts a failure; resolves after the delay that failure earns. */
  async failed(ip: string, clientId: string | undefined): Promise<void> {
    const [address] = await Promise.all([spend(this.byAddress, ip), clientId ? spend(this.byClient, clientId) : undefined]);
    const beyond = (address?.consumedPoints ?? 0) - this.settings.freeFailures;
    if (beyond > 0) {
      const delay = Math.min(this.settings.maxDelayMs, beyond * this.settings.delayStepMs);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

async function spend(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes | undefined> {
  try {
    return await limiter.consume(key, 1);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return rejection;
    throw rejection;
  }
}
