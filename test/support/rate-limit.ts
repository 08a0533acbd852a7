import { parseList } from 'structured-headers';

/** What the RateLimit and RateLimit-Policy fields of an answer say, read as structured fields. */
export interface RateLimitFields {
  policy: string;
  quota: number;
  window: number;
  remaining: number;
  reset: number;
}

/**
 * Reads the RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10) of an answer, or
 * undefined when it carries none. Throws when they are there but malformed, or name different
 * policies: a test reading them then fails.
 */
export function rateLimitOf(res: Response): RateLimitFields | undefined {
  const policyField = res.headers.get('ratelimit-policy');
  const stateField = res.headers.get('ratelimit');
  if (policyField === null && stateField === null) return undefined;
  const [policy] = parseList(policyField ?? '');
  const [state] = parseList(stateField ?? '');
  if (!policy || !state || policy[0] !== state[0] || typeof policy[0] !== 'string') throw new Error(`unreadable RateLimit fields: ${policyField} / ${stateField}`);
  const number = (params: Map<string, unknown>, key: string) => {
    const value = params.get(key);
    if (typeof value !== 'number' || !Number.isInteger(value)) throw new Error(`RateLimit field parameter ${key} is not an integer`);
    return value;
  };
  return {
    policy: policy[0],
    quota: number(policy[1], 'q'),
    window: number(policy[1], 'w'),
    remaining: number(state[1], 'r'),
    reset: number(state[1], 't'),
  };
}

/** The remaining quota an answer's RateLimit field states. */
export function remainingOf(res: Response): number | undefined {
  return rateLimitOf(res)?.remaining;
}
