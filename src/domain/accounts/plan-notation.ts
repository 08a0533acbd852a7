import { ServiceError } from '../errors.ts';
import type { RateWindow } from './plans.ts';

/**
 * How people write a plan's limits, the same in the CLI (`plans set --lookups 25/minute`) and
 * on the dashboard's plan forms: `N/second`, `N/minute`, `N/hour` or `N/day`.
 */

const WINDOWS: Record<string, number> = { second: 1, minute: 60, hour: 3600, day: 86_400 };

/** Reads `N/second`, `N/minute`, `N/hour` or `N/day`. */
export function parseWindow(value: string): RateWindow {
  const m = /^(\d+)\/(second|minute|hour|day)$/.exec(value.trim());
  if (!m) throw new ServiceError('validation_failed', `${JSON.stringify(value)} is not N/second, N/minute, N/hour or N/day`);
  return { limit: Number(m[1]), windowSeconds: WINDOWS[m[2]!]! };
}

/** Writes a rate window the way parseWindow reads it, or as N/<seconds>s. */
export function describeWindow(window: RateWindow): string {
  const unit = Object.entries(WINDOWS).find(([, seconds]) => seconds === window.windowSeconds)?.[0];
  return unit ? `${window.limit}/${unit}` : `${window.limit}/${window.windowSeconds}s`;
}

/** Reads a whole number, 0 included. */
export function parseCount(value: string): number {
  // Beyond 2^53 a number is no longer the one typed; the plan checks already refuse such counts.
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new ServiceError('validation_failed', `${JSON.stringify(value)} is not a whole number`);
  }
  return Number(value);
}
