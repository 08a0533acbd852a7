// @tollwatch/sdk: a client of the Tollwatch API (docs/api.md), on fetch alone.
export { DEFAULT_LOOKUP_DEADLINE_MS, Tollwatch, type TollwatchOptions } from './tollwatch.ts';
export type { CallOptions, RetryNotice } from './call-bounds.ts';
export { numberKeyHash, phoneNumberKey } from './phone-number.ts';
export { DeadlineExceededError, OAuthError, TollwatchError, type FieldError } from './errors.ts';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.ts';
export type { FetchFunction, Sleep } from './retrying-fetch.ts';
export type { SavedToken, SecretSource, TokenCache } from './token-source.ts';
export type { RateLimit } from './rate-limit.ts';
export type * from './types.ts';
export type { Operations } from './generated/api-types.ts';
