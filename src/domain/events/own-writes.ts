import { rangeOfNumberKey } from '../number-range.ts';

/**
 * Read-your-writes for lookups (docs/api.md §7): the lookup aggregates count an event shortly
 * after its commit, and an account's lookups must not miss the account's own acknowledged
 * events on the instance that acknowledged them.
 */
export interface OwnWritesBarrier {
  /**
   * Resolves once the account's acknowledged events count in lookups, those about `key` only
   * when given (`numberLookupKey`, `addressLookupKey`); undefined when they already do.
   */
  ownWritesVisible(accountId: string, key?: string): Promise<void> | undefined;
}

/** For a store whose lookups always count every acknowledged event. */
export const NO_BARRIER: OwnWritesBarrier = { ownWritesVisible: () => undefined };

/** What a number's lookup waits on: the number key of the events that named it. */
export const numberLookupKey = (numberKey: string) => `n:${numberKey}`;
/** What a number's lookup waits on when the number has a range: the range of the events' numbers. */
export const rangeLookupKey = (prefix: string) => `r:${prefix}`;
/** What an address's lookup waits on. */
export const addressLookupKey = (sourceIp: string) => `a:${sourceIp}`;

/** The lookup keys an event changes once folded in: its number's, its number range's, its address's. */
export function lookupKeysOf(event: { number_key: string | null; source_ip: string }): string[] {
  if (event.number_key === null) return [addressLookupKey(event.source_ip)];
  const range = rangeOfNumberKey(event.number_key);
  const keys = [numberLookupKey(event.number_key), addressLookupKey(event.source_ip)];
  if (range !== null) keys.push(rangeLookupKey(range));
  return keys;
}
