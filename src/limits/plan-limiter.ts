import { RateLimiterCluster, RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Plan, RateWindow } from '../domain/accounts/plans.ts';

/** Route groups with their own allowance (docs/api.md §9). */
export type LimitGroup = 'lookups' | 'submissions' | 'event_reads' | 'reports';

/**
 * False-positive reports an account may submit (docs/api.md §17), whatever its plan: each one
 * is read by a person, so the bound is the operator's time, not the account's size. Enough for
 * a PBX to report its own numbers one by one after a bad day; too few to flood the queue.
 */
export const REPORT_ALLOWANCE: RateWindow = { limit: 20, windowSeconds: 3600 };

/** Where a caller stands in its window after a request. */
export interface LimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** A plan's allowance for a group; null where it grants none. */
export function allowanceOf(plan: Plan, group: LimitGroup): RateWindow | null {
  return group === 'lookups' ? plan.lookups : group === 'event_reads' ? plan.eventReads : group === 'reports' ? REPORT_ALLOWANCE : plan.submissions;
}

/** What a refusal says: the plan, its allowance, and when to retry; the same words on every path. */
export function allowanceRefusal(plan: Plan, group: LimitGroup, window: RateWindow, state: LimitState): string {
  return `the ${plan.name} plan allows ${window.limit} ${group} per ${window.windowSeconds} s; retry after ${state.resetSeconds} s`;
}

/** What is told each answer of PlanLimiter.spend. */
export interface AllowanceObserver {
  observe(group: LimitGroup, plan: Plan, accountId: string, window: RateWindow, state: LimitState, cost: number): void;
}

/** Makes the counter for one (group, limit, window); the store behind it is the factory's choice. */
export type LimiterFactory = (options: { keyPrefix: string; points: number; duration: number }) => RateLimiterAbstract;

/** Counters in this process only: right for one instance (the failed-authentication throttle's). */
export const memoryLimiters: LimiterFactory = (options) => new RateLimiterMemory(options);

/**
 * How long a worker waits for the cluster's primary to count. The primary answers in well
 * under a millisecond; a primary that cannot answer in this long is saturated or gone, and a
 * request must not wait on it (as with a hung Redis, whose commands get 500 ms too).
 */
const CLUSTER_TIMEOUT_MS = 500;

/**
 * A counter kept by the cluster's primary, insured by one in this process: when the primary does
 * not answer in time, or cannot be asked, this worker counts alone until it answers again. A
 * slow coordination call then costs a looser limit for a moment, never a failed request (5xx).
 */
class InsuredClusterLimiter extends RateLimiterCluster {
  private readonly insurance: RateLimiterMemory;

  constructor(options: { keyPrefix: string; points: number; duration: number }) {
    super({ ...options, timeoutMs: CLUSTER_TIMEOUT_MS });
    this.insurance = new RateLimiterMemory(options);
  }

  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    return insured(super.consume(key, points, options), () => this.insurance.consume(key, points, options));
  }

  override reward(key: string | number, points?: number, options?: { [key: string]: unknown }): Promise<RateLimiterRes> {
    return insured(super.reward(key, points, options), () => this.insurance.reward(key, points, options));
  }

  override get(key: string | number, options?: { [key: string]: unknown }): Promise<RateLimiterRes | null> {
    return insured(super.get(key, options), () => this.insurance.get(key, options));
  }
}

/** The primary's answer; the insurance's when the primary failed to give one (a refusal is an answer). */
async function insured<T>(primary: Promise<T>, insurance: () => Promise<T>): Promise<T> {
  try {
    return await primary;
  } catch (err) {
    if (err instanceof RateLimiterRes) throw err;
    return insurance();
  }
}

/** Counters kept by the cluster's primary process, shared by its workers (WORKERS without Redis). */
export const clusterLimiters: LimiterFactory = (options) => new InsuredClusterLimiter(options);

/** The counters of one (group, limit, window), by account. */
interface Counters {
  /** A LimitState at once when this process can decide alone, else a promise of one. */
  consume(accountId: string, points: number): LimitState | Promise<LimitState>;
  /** What the account has spent in its current window, spending nothing. */
  usage(accountId: string): Usage | Promise<Usage>;
}

/** What an account has spent of one allowance in its current window (the dashboard shows it). */
export interface Usage {
  used: number;
  resetSeconds: number;
}

/**
 * Per-account, per-group allowances over fixed windows. A counter exists per distinct
 * (group, limit, window), so an operator's plan change applies from the next request.
 *
 * Alone, an instance counts in memory, exactly and without a promise per request. With a
 * shared counter (Redis, or a cluster's primary), it leases allowance in batches (see
 * `LeasedWindows`): one shared call per batch instead of one per request.
 */
export class PlanLimiter {
  private readonly shared: LimiterFactory | undefined;
  private readonly byName = new Map<string, Counters>();
  /** The same counters by the plan's window object: no key to build per request while the plan table is kept. */
  private readonly byWindow = new Map<LimitGroup, WeakMap<RateWindow, Counters>>();

  /** Told each spend's answer, to notice allowances running low or out (AllowanceWatch). */
  private readonly watch: AllowanceObserver | undefined;

  /** Counts in this process alone unless given the factory of shared counters. */
  constructor(shared?: LimiterFactory, watch?: AllowanceObserver) {
    this.shared = shared;
    this.watch = watch;
  }

  /**
   * Spends `cost` of an account's allowance for `group` under its plan: the one rule the API's
   * hook, the direct lookup lane and the dashboard's lookup all follow. Undefined when the plan
   * grants no such allowance (a plan that may not submit): the route refuses on its own terms.
   */
  spend(group: LimitGroup, plan: Plan, accountId: string, cost = 1): { window: RateWindow; state: LimitState | Promise<LimitState> } | undefined {
    const window = allowanceOf(plan, group);
    if (!window) return undefined;
    const state = this.consume(group, accountId, window, cost);
    const watch = this.watch;
    if (watch) {
      if (state instanceof Promise) void state.then((s) => watch.observe(group, plan, accountId, window, s, cost), () => {});
      else watch.observe(group, plan, accountId, window, state, cost);
    }
    return { window, state };
  }

  /** Spends `points` of an account's allowance; a refused request spends nothing. */
  consume(group: LimitGroup, accountId: string, window: RateWindow, points = 1): LimitState | Promise<LimitState> {
    return this.countersFor(group, window).consume(accountId, points);
  }

  /** What an account has spent of its allowance in the current window, spending nothing (the dashboard's usage). */
  async usage(group: LimitGroup, accountId: string, window: RateWindow): Promise<Usage> {
    return this.countersFor(group, window).usage(accountId);
  }

  private countersFor(group: LimitGroup, window: RateWindow): Counters {
    let known = this.byWindow.get(group);
    if (!known) this.byWindow.set(group, (known = new WeakMap()));
    let counters = known.get(window);
    if (counters) return counters;
    // Plans are read again every few seconds: the counts must outlive their window objects.
    const keyPrefix = `tollwatch:rl:${group}:${window.limit}:${window.windowSeconds}`;
    counters = this.byName.get(keyPrefix);
    if (!counters) {
      const { limit, windowSeconds } = window;
      counters = this.shared
        ? new LeasedWindows(this.shared({ keyPrefix, points: limit, duration: windowSeconds }), limit)
        : new LocalWindows(limit, windowSeconds * 1000);
      this.byName.set(keyPrefix, counters);
    }
    known.set(window, counters);
    return counters;
  }
}

/**
 * Fixed windows counted in this process, each starting at an account's first request (as the
 * shared counters' do). Windows past their end are swept as the map grows, not by timers.
 */
export class LocalWindows implements Counters {
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly windows = new Map<string, { used: number; endsAt: number }>();
  private sweepAt = 1024;

  constructor(limit: number, windowMs: number, now: () => number = Date.now) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.now = now;
  }

  consume(accountId: string, points: number): LimitState {
    const now = this.now();
    let window = this.windows.get(accountId);
    if (!window || window.endsAt <= now) {
      window = { used: 0, endsAt: now + this.windowMs };
      this.windows.set(accountId, window);
      if (this.windows.size >= this.sweepAt) this.sweep(now);
    }
    const allowed = window.used + points <= this.limit;
    if (allowed) window.used += points;
    return { allowed, limit: this.limit, remaining: Math.max(0, this.limit - window.used), resetSeconds: secondsUntil(window.endsAt, now) };
  }

  usage(accountId: string): Usage {
    const now = this.now();
    const window = this.windows.get(accountId);
    if (!window || window.endsAt <= now) return { used: 0, resetSeconds: Math.ceil(this.windowMs / 1000) };
    return { used: window.used, resetSeconds: secondsUntil(window.endsAt, now) };
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) if (window.endsAt <= now) this.windows.delete(key);
    this.sweepAt = Math.max(1024, this.windows.size * 2);
  }
}

/** Most points one lease takes from a shared counter. */
export const MAX_LEASE = 100;

/** The lease of a limit: a hundredth of it, at most MAX_LEASE, at least 1 (small limits are counted one by one). */
export function leaseSize(limit: number): number {
  return Math.max(1, Math.min(MAX_LEASE, Math.floor(limit / 100)));
}

/**
 * Fixed windows kept by a shared counter, spent here from leases: a request that finds no
 * lease left takes `leaseSize(limit)` points from the shared counter at once (or only its own
 * points when fewer remain) and the next requests spend them here until they are gone or the
 * shared window ends. Leased points are counted by the shared counter before any is spent, so
 * the instances together never admit more than the limit; what an instance leased and did not
 * spend before the window ends is lost to the others: at most leaseSize − 1 points per
 * instance per window (docs/api.md §9). Renewals of one account wait for each other, so
 * that concurrent requests do not each take a lease.
 */
export class LeasedWindows implements Counters {
  private readonly shared: RateLimiterAbstract;
  private readonly limit: number;
  private readonly lease: number;
  private readonly now: () => number;
  private readonly leases = new Map<string, { left: number; endsAt: number; sharedRemaining: number }>();
  private readonly renewing = new Map<string, Promise<LimitState>>();

  constructor(shared: RateLimiterAbstract, limit: number, now: () => number = Date.now) {
    this.shared = shared;
    this.limit = limit;
    this.lease = leaseSize(limit);
    this.now = now;
  }

  consume(accountId: string, points: number): LimitState | Promise<LimitState> {
    const now = this.now();
    const lease = this.leases.get(accountId);
    if (lease && lease.endsAt > now && lease.left >= points) {
      lease.left -= points;
      return { allowed: true, limit: this.limit, remaining: lease.sharedRemaining + lease.left, resetSeconds: secondsUntil(lease.endsAt, now) };
    }
    const pending = this.renewing.get(accountId);
    if (pending) return pending.then(() => this.consume(accountId, points));
    const renewal = this.renew(accountId, points).finally(() => this.renewing.delete(accountId));
    this.renewing.set(accountId, renewal);
    return renewal;
  }

  private async renew(accountId: string, points: number): Promise<LimitState> {
    const wanted = Math.max(points, this.lease);
    let taken = await this.take(accountId, wanted);
    // Fewer left than a lease: this request may still fit.
    if (!taken.allowed && wanted > points) taken = await this.take(accountId, points);
    if (!taken.allowed) return stateOf(this.limit, taken.res, false);
    const now = this.now();
    const left = taken.points - points;
    this.leases.set(accountId, { left, endsAt: now + taken.res.msBeforeNext, sharedRemaining: Math.max(0, this.limit - taken.res.consumedPoints) });
    return { ...stateOf(this.limit, taken.res, true), remaining: Math.max(0, this.limit - taken.res.consumedPoints) + left };
  }

  /** Spent across the instances: the shared count less what this instance leased and has not spent. */
  async usage(accountId: string): Promise<Usage> {
    const res = await this.shared.get(accountId);
    if (!res) return { used: 0, resetSeconds: 1 };
    const lease = this.leases.get(accountId);
    const unspent = lease && lease.endsAt > this.now() ? lease.left : 0;
    return { used: Math.min(this.limit, Math.max(0, res.consumedPoints - unspent)), resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
  }

  /** Takes points from the shared counter; a refusal gives them back. */
  private async take(accountId: string, points: number): Promise<{ allowed: boolean; points: number; res: RateLimiterRes }> {
    try {
      return { allowed: true, points, res: await this.shared.consume(accountId, points) };
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      // Give the points back: a refused batch must not eat the allowance of later requests.
      const after = await this.shared.reward(accountId, points).catch(() => rejection);
      return { allowed: false, points, res: after instanceof RateLimiterRes ? after : rejection };
    }
  }
}

function secondsUntil(endsAt: number, now: number): number {
  return Math.max(1, Math.ceil((endsAt - now) / 1000));
}

function stateOf(limit: number, res: RateLimiterRes, allowed: boolean): LimitState {
  return {
    allowed,
    limit,
    remaining: Math.max(0, limit - res.consumedPoints),
    resetSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
  };
}
