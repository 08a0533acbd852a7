import { SHARED_SCOPE } from '../../domain/visibility.ts';

/**
 * Whether a scope keeps its (number, address) pairs by address as well, in `ip_numbers`. Every
 * scope keeps them by number, in `number_sources`; only accounts' own scopes keep them twice.
 *
 * The sets keep distinct counts exact. A lookup across two scopes (the shared data set and the
 * caller's own) walks the own scope's members of the key looked up and checks each against the
 * shared scope's (lookups-repository.ts, distinctUnion): walking needs a scope's pairs by the key
 * of either kind, checking needs them either way, and a pair is in a scope by address exactly
 * when it is by number. The shared scope is never walked, so its pairs, most of a store's (an
 * operator's imports and trusted fleets count there), are written once: each new pair is a
 * random-order B-tree insert, and the second one took a quarter of the store's pace under an
 * import (docs/performance.md, "One distinct set for the shared data set").
 */
export function keepsPairsByAddress(scope: string): boolean {
  return scope !== SHARED_SCOPE;
}
