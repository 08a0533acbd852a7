/**
 * The range a called number belongs to (docs/scoring.md, "Ranges"): its international key less
 * its last RANGE_DIGITS digits, a block of 100 numbers. Premium-rate and IRSF numbers are leased,
 * listed and resold in such blocks, and fraudsters test a few numbers of a block before pumping
 * traffic to the rest, so a block the honeypots see probed is evidence about its unseen numbers.
 */

/** Digits a range leaves open: 2, a block of 100 numbers. */
export const RANGE_DIGITS = 2;

/**
 * Fewest digits (country code included) a key must have to belong to a range. Below it a block of
 * 100 would be a large part of a small numbering plan (a 7-digit plan's block is a hundredth of
 * an area), not a block a reseller leases.
 */
export const RANGE_MIN_DIGITS = 8;

/** Most digits an E.164 number has: a longer key is not a number any network routes. */
export const RANGE_MAX_DIGITS = 15;

/** An international key as normalisePhoneNumber makes it: `+`, a country code, digits only. */
const RANGED_KEY = new RegExp(`^\\+[1-9][0-9]{${RANGE_MIN_DIGITS - 1},${RANGE_MAX_DIGITS - 1}}$`);

/**
 * The range (its prefix, e.g. `+46812118`) of a number key, or null when the key belongs to none:
 * national forms, extensions and anything not an international key of 8 to 15 digits. National
 * forms name no country (`0812118532` is a number in any of them) and extensions are one PBX's
 * own, so neither can be grouped across the honeypots into a block anyone leases.
 */
export function rangeOfNumberKey(numberKey: string): string | null {
  return RANGED_KEY.test(numberKey) ? numberKey.slice(0, -RANGE_DIGITS) : null;
}

/** Whether a value is a range prefix as rangeOfNumberKey makes them. */
export function isRangePrefix(value: string): boolean {
  return rangeOfNumberKey(`${value}${'0'.repeat(RANGE_DIGITS)}`) === value;
}
