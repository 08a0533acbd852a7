import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { slowDown, spend } from './failure-throttle.ts';
import type { LimiterFactory } from './plan-limiter.ts';

/**
 * How many password guesses sign-in allows. Each bound holds per email (an account's user) and
 * per address, over a short and a long window: by default at most 10 guesses at one email in 15
 * minutes and 50 in a day, whoever makes them, and 30 and 300 from one address.
 */
export interface SignInLockSettings {
  perEmail: { short: number; long: number };
  perAddress: { short: number; long: number };
  shortWindowSeconds: number;
  longWindowSeconds: number;
  /** Failures from one address answered at full speed; later ones wait longer each. */
  freeFailures: number;
  delayStepMs: number;
  maxDelayMs: number;
}

export const DEFAULT_SIGN_IN_LOCKS: SignInLockSettings = {
  perEmail: { short: 10, long: 50 },
  perAddress: { short: 30, long: 300 },
  shortWindowSeconds: 900,
  longWindowSeconds: 86_400,
  freeFailures: 5,
  delayStepMs: 200,
  maxDelayMs: 2000,
};

/** What a lock is held on. */
export type LockKey = 'email' | 'address';

/** The verdict on one sign-in attempt, given before its password is looked at. */
export type SignInAttempt =
  | {
      allowed: true;
      /** How long a wrong password's answer is held: nothing for an address's first failures. */
      delayMs: number;
    }
  | {
      allowed: false;
      /** Seconds until every lock refusing this attempt has ended. */
      retryAfterSeconds: number;
      /** The locks this attempt was the first to meet: tell the owner, write the audit row, once. */
      lockStarted: LockKey[];
    };

interface Counter {
  key: LockKey;
  limiter: RateLimiterAbstract;
  limit: number;
}

/**
 * Bounds password guessing over time (docs/dashboard.md, "Sign-in"). Every attempt spends a
 * guess against its email and its address before the password is checked, atomically, so
 * however many arrive at once no more than the bound are ever checked; past it the attempt is
 * refused without looking at the password, so the right one is refused too while the lock holds
 * and a refusal says nothing about it. A sign-in that succeeds gets its guesses back: only
 * failures use up the allowance.
 */
export class SignInLocks {
  private readonly counters: Counter[];
  private readonly settings: SignInLockSettings;

  /** `keyPrefix` names the counters: the second step of a sign-in keeps its own (web/routes/two-factor.ts). */
  constructor(factory: LimiterFactory, settings: SignInLockSettings = DEFAULT_SIGN_IN_LOCKS, keyPrefix = 'tollwatch:signin') {
    this.settings = settings;
    const counter = (key: LockKey, window: 'short' | 'long'): Counter => {
      const bounds = key === 'email' ? settings.perEmail : settings.perAddress;
      const duration = window === 'short' ? settings.shortWindowSeconds : settings.longWindowSeconds;
      return { key, limit: bounds[window], limiter: factory({ keyPrefix: `${keyPrefix}:${key}:${window}`, points: bounds[window], duration }) };
    };
    this.counters = [counter('address', 'short'), counter('email', 'short'), counter('address', 'long'), counter('email', 'long')];
  }

  /** Spends one guess at `email` from `ip`, and says whether its password may be checked. */
  async attempt(ip: string, email: string): Promise<SignInAttempt> {
    const spent = await Promise.all(this.counters.map((c) => spend(c.limiter, subjectOf(c.key, ip, email))));
    const over = this.counters.map((c, i) => ({ ...c, res: spent[i]! })).filter((c) => c.res.consumedPoints > c.limit);
    if (over.length > 0) {
      // A refused attempt checks no password, so it is no guess: the counters it did not find
      // full get their point back (a lock's own counter may grow; its window does not move).
      await Promise.all(this.counters.filter((c) => !over.some((o) => o.limiter === c.limiter)).map((c) => c.limiter.reward(subjectOf(c.key, ip, email), 1)));
      return {
        allowed: false,
        retryAfterSeconds: Math.max(...over.map((c) => Math.max(1, Math.ceil(c.res.msBeforeNext / 1000)))),
        // A counter only grows within its window: exactly one attempt sees limit + 1.
        lockStarted: [...new Set(over.filter((c) => c.res.consumedPoints === c.limit + 1).map((c) => c.key))],
      };
    }
    const beyond = spent[0]!.consumedPoints - this.settings.freeFailures;
    return { allowed: true, delayMs: beyond > 0 ? Math.min(this.settings.maxDelayMs, beyond * this.settings.delayStepMs) : 0 };
  }

  /** Waits the delay a wrong password's answer has earned: nothing for an address's first failures. */
  async slowDown(attempt: Extract<SignInAttempt, { allowed: true }>): Promise<void> {
    await slowDown(attempt);
  }

  /** Gives back the guess a successful sign-in spent. */
  async succeeded(ip: string, email: string): Promise<void> {
    await Promise.all(this.counters.map((c) => c.limiter.reward(subjectOf(c.key, ip, email), 1)));
  }

  /** Lifts the locks on an email: its user just chose a new password through a one-time link. */
  async release(email: string): Promise<void> {
    await Promise.all(this.counters.filter((c) => c.key === 'email').map((c) => c.limiter.delete(subjectOf('email', '', email))));
  }
}

/** Emails as sign-in reads them: trimmed and lower-cased, so `A@x` and `a@x ` share a lock. */
function subjectOf(key: LockKey, ip: string, email: string): string {
  return key === 'address' ? ip : email.trim().toLowerCase().slice(0, 320);
}
