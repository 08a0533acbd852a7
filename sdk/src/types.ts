// Names for the generated types that callers use, so they need not spell out Operations paths.
import type { BulkItemError, IpAddressFound, IpAddressNotFound, Operations, PhoneNumberFound, PhoneNumberNotFound } from './generated/api-types.ts';
import type { RateLimit } from './rate-limit.ts';

export type {
  BulkItemError,
  HoneypotEvent,
  IpAddressFeed,
  IpAddressFeedEntry,
  IpAddressFound,
  IpAddressNotFound,
  PhoneNumberFeed,
  PhoneNumberFeedEntry,
  PhoneNumberFound,
  PhoneNumberNotFound,
  Problem,
  StoredEvent,
} from './generated/api-types.ts';

/** A number's lookup: seen (`found: true`) or not (docs/api.md §7). */
export type PhoneNumberLookup = PhoneNumberFound | PhoneNumberNotFound;
/** An address's lookup: seen (`found: true`) or not (docs/api.md §7). */
export type IpAddressLookup = IpAddressFound | IpAddressNotFound;
/** One value's answer in a bulk number lookup: the single lookup's answer, or the value's error. */
export type PhoneNumberBulkResult = PhoneNumberLookup | BulkItemError;
/** One value's answer in a bulk address lookup: the single lookup's answer, or the value's error. */
export type IpAddressBulkResult = IpAddressLookup | BulkItemError;

/**
 * A range lookup's finding (docs/api.md §13): the key that was hashed, and whether its hash was
 * among the range's numbers, with its events and score when it was.
 */
export type RangeLookup = { key: string; found: true; seen_count: number; score: number } | { key: string; found: false };

/** A feed poll's query (docs/api.md §14). */
export interface FeedQuery {
  /** Only entries scoring at least this, 0–100 (the server's default is 50). */
  minScore?: number;
  /** Only entries last seen at or after this instant. */
  since?: string;
  /** The `etag` of the answer the caller holds: while it is still the answer, the poll is `notModified`. */
  ifNoneMatch?: string;
}

/** The phone-number feed's query: also number ranges (blocks of 100) scoring `minScore`, as range entries, when `ranges` is true; those ranges alone when it is `'only'`. */
export interface PhoneNumberFeedQuery extends FeedQuery {
  ranges?: boolean | 'only';
}

/**
 * A feed poll's outcome: the feed and its `etag` (to send back as `ifNoneMatch`), or
 * `notModified` when the answer held is still the feed (HTTP 304, no body).
 */
export type FeedPoll<T> = { notModified: false; etag: string | null; feed: T } | { notModified: true; etag: string | null };

/** The filters of `GET /api/events`, with `limit` and `cursor` (docs/api.md §8). */
export type EventFilters = Operations['listEvents']['query'];
/** One page of the caller's events, newest first; `next_cursor` is null on the last page. */
export type EventPage = Operations['listEvents']['responses']['200'];
/** One event's outcome in a batch (docs/api.md §5). */
export type BatchItemResult = Operations['submitEventBatch']['responses']['200']['results'][number];

/** What a single submission did: `created`, or `replayed` for an identical event already stored. */
export interface SubmitResult {
  status: 'created' | 'replayed';
  /** The server's short thanks. */
  message: string;
  /** Where the event is read back, `/api/events/{event_uuid}`. */
  location: string | null;
  /** The submission allowance left after it. */
  rateLimit?: RateLimit;
}

/**
 * The outcomes of `submitEvents`, over every batch sent: each event's result with `index` its
 * position in the array given, and the counts by status.
 */
export interface SubmitEventsResult {
  results: BatchItemResult[];
  created: number;
  replayed: number;
  conflict: number;
  invalid: number;
  /** The submission allowance left after the last batch. */
  rateLimit?: RateLimit;
}

/** A value the SDK returned, with the allowance its answer reported (not enumerable: JSON shows the server's answer as it was). */
export type WithRateLimit<T> = T & { readonly rateLimit?: RateLimit };
