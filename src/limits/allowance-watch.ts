import type { Plan, RateWindow } from '../domain/accounts/plans.ts';
import type { LimitGroup, LimitState } from './plan-limiter.ts';
import { rateText } from '../domain/readable-numbers.ts';
import { durationText } from '../domain/readable-time.ts';

/** How far an allowance has gone: a tenth or less left, or none (a request refused). */
export type AllowanceLevel = 'low' | 'spent';

/** An account's allowance reaching a level, the first time in its window. */
export interface AllowanceNotice {
  group: LimitGroup;
  level: AllowanceLevel;
  accountId: string;
  plan: Plan;
  window: RateWindow;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** What an allowance notice is told to: the metric, the account's owner. */
export interface AllowanceNoticeSinks {
  /** Every notice: each window whose allowance ran low or out (a metric). */
  counted(notice: AllowanceNotice): void;
  /** At most one a `tellEveryMs` per account, group and level (the owner's mail). */
  told(notice: AllowanceNotice): void;
}

/** Accounts remembered at most; beyond it, those whose marks have all expired are forgotten. */
const REMEMBERED = 10_000;

/**
 * Watches what PlanLimiter.spend answers and notices an account's allowance running low (a
 * tenth or less left) and running out (a request refused), once per window each; the owner is
 * told at most once an hour per level (docs/api.md §9). A guard whose allowance runs out lets
 * calls through or refuses them by its own setting (docs/call-guard.md): this is how the
 * operator and the owner learn of it before and when it happens.
 */
export class AllowanceWatch {
  private readonly sinks: AllowanceNoticeSinks;
  private readonly tellEveryMs: number;
  private readonly now: () => number;
  /** `group|account|level` => until when this window's notice, and the owner's, are given. */
  private readonly marks = new Map<string, { windowEndsAt: number; toldUntil: number }>();

  constructor(sinks: AllowanceNoticeSinks, options: { tellEveryMs?: number; now?: () => number } = {}) {
    this.sinks = sinks;
    this.tellEveryMs = options.tellEveryMs ?? 3600_000;
    this.now = options.now ?? Date.now;
  }

  /** One spend's answer: `cost` points asked of `window` under `plan`. */
  observe(group: LimitGroup, plan: Plan, accountId: string, window: RateWindow, state: LimitState, cost: number): void {
    // The reports' allowance is no plan's: nothing a bigger plan would change, nothing to mail about.
    if (group === 'reports') return;
    const tenth = Math.floor(window.limit / 10);
    let level: AllowanceLevel;
    if (!state.allowed) level = 'spent';
    else if (state.remaining <= tenth && state.remaining + cost > tenth) level = 'low';
    else return;
    const now = this.now();
    const key = `${group}|${accountId}|${level}`;
    const mark = this.marks.get(key);
    if (mark && mark.windowEndsAt > now) return;
    const notice: AllowanceNotice = { group, level, accountId, plan, window, resetSeconds: state.resetSeconds };
    const tell = !mark || mark.toldUntil <= now;
    if (!mark && this.marks.size >= REMEMBERED) this.forgetExpired(now);
    this.marks.set(key, { windowEndsAt: now + state.resetSeconds * 1000, toldUntil: tell ? now + this.tellEveryMs : mark!.toldUntil });
    this.sinks.counted(notice);
    if (tell) this.sinks.told(notice);
  }

  private forgetExpired(now: number): void {
    for (const [key, mark] of this.marks) if (mark.windowEndsAt <= now && mark.toldUntil <= now) this.marks.delete(key);
  }
}

/** The owner's mail about a notice. */
export function allowanceMail(notice: AllowanceNotice): { subject: string; text: string } {
  const { group, plan, window } = notice;
  const allowance = rateText(window, group === 'event_reads' ? 'event read' : group === 'submissions' ? 'submission' : 'lookup');
  const rest = durationText(notice.resetSeconds);
  const subject =
    notice.level === 'spent' ? `Tollwatch: your ${group.replace('_', ' ')} allowance ran out` : `Tollwatch: your ${group.replace('_', ' ')} allowance is running low`;
  return {
    subject,
    text: [
      notice.level === 'spent'
        ? `Your account's ${plan.name} plan allows ${allowance}, and it is spent: requests are answered 429 for ${rest} more.`
        : `Your account's ${plan.name} plan allows ${allowance}, and a tenth or less of it is left for the next ${rest}.`,
      '',
      'A call guard (docs/call-guard.md) spends one or two lookups a call: when its allowance runs out it lets',
      'calls through or refuses them, as it was configured. Ask your operator for a plan sized for your call rate.',
    ].join('\n'),
  };
}
