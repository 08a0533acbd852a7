import { InvalidArgumentError } from 'commander';
import type { RateWindow } from '../domain/plans.ts';
import { ServiceError } from '../domain/errors.ts';

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

/** Reads `yes` or `no`. */
export function parseYesNo(value: string): boolean {
  if (value !== 'yes' && value !== 'no') throw new ServiceError('validation_failed', 'say yes or no');
  return value === 'yes';
}

/** A commander option parser for a whole number from `min` to `max`; anything else is a usage error (exit 2). */
export function wholeNumberOption(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    return n;
  };
}
