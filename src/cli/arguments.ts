import { InvalidArgumentError } from 'commander';
import { ServiceError } from '../domain/errors.ts';

// The limits' notation is shared with the dashboard's plan forms.
export { describeWindow, parseCount, parseWindow } from '../domain/accounts/plan-notation.ts';

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
