import { serializeList } from 'structured-headers';
import type { RateWindow } from '../domain/accounts/plans.ts';
import type { LimitGroup, LimitState } from '../limits/plan-limiter.ts';

/**
 * The RateLimit and RateLimit-Policy fields of draft-ietf-httpapi-ratelimit-headers-10
 * (docs/api.md §9): structured fields naming the policy by its route group, the quota and window
 * it grants, and what remains of it with the seconds until it resets.
 */

/**
 * What remains of the group's allowance. A group name is a token and the values integers, so
 * the field is written as it serializes (structured-headers would build and walk a list per
 * request for the same text).
 */
export function rateLimitField(group: LimitGroup, state: LimitState): string {
  return `"${group}";r=${state.remaining};t=${state.resetSeconds}`;
}

/** The RateLimit-Policy field of each (group, window), serialized once while the plan table is kept. */
export class PolicyFields {
  private readonly byGroup = new Map<LimitGroup, WeakMap<RateWindow, string>>();

  of(group: LimitGroup, window: RateWindow): string {
    let known = this.byGroup.get(group);
    if (!known) this.byGroup.set(group, (known = new WeakMap()));
    let field = known.get(window);
    if (field === undefined) {
      field = serializeList([[group, new Map([['q', window.limit], ['w', window.windowSeconds]])]]);
      known.set(window, field);
    }
    return field;
  }
}
