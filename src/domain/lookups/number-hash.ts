import { createHash } from 'node:crypto';

/** Hex digits of a range lookup's prefix (docs/api.md §13): 16⁵ ranges, as Pwned Passwords has. */
export const RANGE_PREFIX_LENGTH = 5;

/**
 * The SHA-256 of a number key (UTF-8), as lower-case hex: what range lookups match on, so a
 * caller can ask about a number by the first RANGE_PREFIX_LENGTH digits of its hash alone.
 */
export function numberHash(numberKey: string): string {
  return createHash('sha256').update(numberKey, 'utf8').digest('hex');
}
