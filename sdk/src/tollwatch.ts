import { splitIntoBatches } from './batches.ts';
import { Deadline, throwIfEnded, type Bounds, type CallOptions, type RetryNotice } from './call-bounds.ts';
import { TollwatchError } from './errors.ts';
import type { HoneypotEvent, Operations, Problem, StoredEvent } from './generated/api-types.ts';
import { numberKeyHash, phoneNumberKey } from './phone-number.ts';
import { readRateLimit } from './rate-limit.ts';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, type RetryPolicy } from './retry-policy.ts';
import { fetchWithRetries, realSleep, type FetchFunction, type Sleep } from './retrying-fetch.ts';
import { TokenSource, type SecretSource, type TokenCache } from './token-source.ts';
import type {
  BatchItemResult,
  EventFilters,
  EventPage,
  FeedPoll,
  FeedQuery,
  IpAddressBulkResult,
  IpAddressFeed,
  IpAddressLookup,
  PhoneNumberBulkResult,
  PhoneNumberFeed,
  PhoneNumberFeedQuery,
  PhoneNumberLookup,
  RangeLookup,
  SubmitEventsResult,
  SubmitResult,
  WithRateLimit,
} from './types.ts';

/** Hex digits of the hash a range lookup sends (docs/api.md §13). */
const RANGE_PREFIX_LENGTH = 5;

/** Lookups fail within a second unless told otherwise (TollwatchOptions.lookupDeadlineMs). */
export const DEFAULT_LOOKUP_DEADLINE_MS = 1_000;

/** How to reach a Tollwatch server and who the client is. */
export interface TollwatchOptions {
  /** The server's address, e.g. `https://tollwatch.example.com`: the API is under `/api`, tokens come from `/oauth/token`. */
  baseUrl: string;
  /** The API client's id, from the account owner. */
  clientId: string;
  /** Its secret, or a function that returns the current one (read again at every token request). */
  clientSecret: SecretSource;
  /** The audience to ask tokens for; the server's own API when absent (docs/api.md §2). */
  audience?: string;
  /** The token endpoint, when it is not `<baseUrl>/oauth/token`. */
  tokenUrl?: string;
  /** The `fetch` to use; the global one by default. */
  fetch?: FetchFunction;
  /** How to retry on 429, 502, 503, 504 and network errors; see DEFAULT_RETRY_POLICY. */
  retry?: Partial<RetryPolicy>;
  /**
   * The deadline of every lookup (single, bulk per request of 1,000, range) in milliseconds,
   * unless a call sets its own `deadlineMs`: a lookup is asked while a call waits, so it fails
   * fast rather than wait out retries. Default 1,000; `Infinity` leaves lookups to the retry
   * policy alone, as submissions and reads are.
   */
  lookupDeadlineMs?: number;
  /** Told before every wait between tries (the token request's too), to log or count them. */
  onRetry?: (notice: RetryNotice) => void;
  /** Where tokens are kept between runs (a CLI's file); in memory only by default. */
  tokenCache?: TokenCache;
  /** Renew a token this many seconds before it expires (default 60, at most half its lifetime). */
  renewBeforeSeconds?: number;
  /** The clock, in milliseconds since the epoch (for tests). */
  now?: () => number;
  /** How to wait between tries (for tests). */
  sleep?: Sleep;
}

/** Bounds of one request (docs/api.md §5, §7): items, and bytes of body. */
const BATCH_EVENTS = 1000;
const BATCH_BYTES = 16 * 1024 * 1024;
const BULK_VALUES = 1000;
// 128 KiB, less room for the `{"phone_numbers":…}` around the array.
const BULK_BYTES = 128 * 1024 - 64;

interface Answer {
  status: number;
  json: unknown;
  headers: Headers;
}

/**
 * A client of one Tollwatch server for one API client: it gets and renews access tokens itself,
 * retries what is safe to retry, and throws TollwatchError (an API problem) or OAuthError (the
 * token endpoint refused the credentials).
 */
export class Tollwatch {
  private readonly api: string;
  private readonly fetch: FetchFunction;
  private readonly retry: RetryPolicy;
  private readonly sleep: Sleep;
  private readonly tokens: TokenSource;
  private readonly lookupDeadlineMs: number;
  private readonly onRetry: ((notice: RetryNotice) => void) | undefined;

  constructor(options: TollwatchOptions) {
    // The root, whether given as the server's address or as its API's (`…/api`, docs/api.md §1).
    const root = options.baseUrl.replace(/\/+$/, '').replace(/\/api$/, '');
    this.api = `${root}/api`;
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.sleep = options.sleep ?? realSleep;
    this.lookupDeadlineMs = options.lookupDeadlineMs ?? DEFAULT_LOOKUP_DEADLINE_MS;
    this.onRetry = options.onRetry;
    this.tokens = new TokenSource({
      tokenUrl: options.tokenUrl ?? `${root}/oauth/token`,
      clientId: options.clientId,
      clientSecret: options.clientSecret,
      audience: options.audience,
      renewBeforeSeconds: options.renewBeforeSeconds ?? 60,
      fetch: this.fetch,
      retry: this.retry,
      sleep: this.sleep,
      now: options.now ?? Date.now,
      onRetry: options.onRetry,
      cache: options.tokenCache,
    });
  }

  /**
   * Gets an access token now unless the client holds a valid one: to check the credentials (an
   * OAuthError says why they were refused), or before a call path's first lookup, so that it
   * does not pay for the token request.
   */
  async authenticate(options?: CallOptions): Promise<void> {
    await this.tokens.get(this.bounds(options));
  }

  /** Submits one event (docs/api.md §5): `created`, or `replayed` when the same event was already stored. */
  async submitEvent(event: HoneypotEvent, options?: CallOptions): Promise<SubmitResult> {
    const answer = await this.call('POST', '/events', options, JSON.stringify(event));
    if (answer.status !== 201 && answer.status !== 200) throw failure(answer);
    const result: SubmitResult = {
      status: answer.status === 201 ? 'created' : 'replayed',
      message: (answer.json as Operations['submitEvent']['responses']['201']).message,
      location: answer.headers.get('location'),
    };
    const rateLimit = readRateLimit(answer.headers);
    if (rateLimit) result.rateLimit = rateLimit;
    return result;
  }

  /**
   * Submits events in batches of up to 1,000 (and 16 MiB), one batch after another. Each event
   * is stored or refused on its own; the results keep the order and indexes of `events`. A
   * thrown error may follow batches already stored: submitting the same events again is safe,
   * since stored ones answer `replayed`.
   */
  async submitEvents(events: readonly HoneypotEvent[], options?: CallOptions): Promise<SubmitEventsResult> {
    const total: SubmitEventsResult = { results: [], created: 0, replayed: 0, conflict: 0, invalid: 0 };
    for (const batch of splitIntoBatches(events, BATCH_EVENTS, BATCH_BYTES)) {
      const answer = await this.call('POST', '/events/batch', options, `[${batch.json.join(',')}]`);
      if (answer.status !== 200) throw failure(answer);
      const page = answer.json as Operations['submitEventBatch']['responses']['200'];
      for (const item of page.results) total.results.push({ ...item, index: item.index + batch.start } satisfies BatchItemResult);
      total.created += page.created;
      total.replayed += page.replayed;
      total.conflict += page.conflict;
      total.invalid += page.invalid;
      const rateLimit = readRateLimit(answer.headers);
      if (rateLimit) total.rateLimit = rateLimit;
    }
    return total;
  }

  /** What is known of a phone number (docs/api.md §7); a number never seen is `found: false`, not an error. */
  async lookupPhoneNumber(phoneNumber: string, options?: CallOptions): Promise<WithRateLimit<PhoneNumberLookup>> {
    return this.lookup<PhoneNumberLookup>(`/phone-numbers/${encodeURIComponent(phoneNumber)}`, options);
  }

  /** What is known of a source address (docs/api.md §7); an address never seen is `found: false`, not an error. */
  async lookupIpAddress(ipAddress: string, options?: CallOptions): Promise<WithRateLimit<IpAddressLookup>> {
    return this.lookup<IpAddressLookup>(`/ip-addresses/${encodeURIComponent(ipAddress)}`, options);
  }

  /**
   * Whether a number was seen, without sending it (docs/api.md §13): the number's key is worked
   * out and hashed here, only the first 5 hex digits of its SHA-256 are sent, and the answer's
   * range is searched here for the rest. Padding (`seen_count` 0) is ignored. Throws a
   * TypeError for a value that is no phone number, before anything is sent.
   */
  async rangeLookup(phoneNumber: string, options?: CallOptions): Promise<WithRateLimit<RangeLookup>> {
    const key = phoneNumberKey(phoneNumber);
    if (key === null) throw new TypeError('not a phone number: up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)');
    const hash = await numberKeyHash(key);
    const prefix = hash.slice(0, RANGE_PREFIX_LENGTH);
    const answer = await this.call('GET', `/phone-numbers/range/${prefix}`, this.lookupOptions(options));
    if (answer.status !== 200) throw failure(answer);
    const range = answer.json as Operations['lookupPhoneNumberRange']['responses']['200'];
    const entry = range.entries.find((e) => e.seen_count > 0 && e.suffix === hash.slice(RANGE_PREFIX_LENGTH));
    const result: RangeLookup = entry ? { key, found: true, seen_count: entry.seen_count, score: entry.score } : { key, found: false };
    return withRateLimit(result, answer.headers);
  }

  /**
   * Looks numbers up in bulk, 1,000 per request; one result per value, in order, an invalid value
   * answered with its error. A deadline bounds each request, not the whole list.
   */
  async lookupPhoneNumbers(phoneNumbers: readonly string[], options?: CallOptions): Promise<WithRateLimit<PhoneNumberBulkResult[]>> {
    return this.bulkLookup<PhoneNumberBulkResult>('/phone-numbers/lookup', 'phone_numbers', phoneNumbers, options);
  }

  /**
   * Looks addresses up in bulk, 1,000 per request; one result per value, in order, an invalid
   * value answered with its error. A deadline bounds each request, not the whole list.
   */
  async lookupIpAddresses(ipAddresses: readonly string[], options?: CallOptions): Promise<WithRateLimit<IpAddressBulkResult[]>> {
    return this.bulkLookup<IpAddressBulkResult>('/ip-addresses/lookup', 'ip_addresses', ipAddresses, options);
  }

  /**
   * The blocklist of source addresses scoring at least `minScore` (docs/api.md §14), as JSON:
   * most recently seen first, each entry with its score, sightings, tags and `valid_until` (when
   * it stops holding). With `ifNoneMatch`, `{ notModified: true }` while that answer still holds.
   * Counted as one lookup, a `notModified` too; bounded by the retry policy and `options`, not by
   * the lookups' deadline.
   */
  async ipAddressFeed(query: FeedQuery = {}, options?: CallOptions): Promise<WithRateLimit<FeedPoll<IpAddressFeed>>> {
    return this.feed<IpAddressFeed>('ip-addresses', query, options);
  }

  /**
   * The blocklist of called numbers, as ipAddressFeed (docs/api.md §14); with `ranges: true`,
   * also the number ranges scoring `minScore`, as entries with `range` (the block's prefix);
   * with `ranges: 'only'`, those ranges alone.
   */
  async phoneNumberFeed(query: PhoneNumberFeedQuery = {}, options?: CallOptions): Promise<WithRateLimit<FeedPoll<PhoneNumberFeed>>> {
    const ranges: Record<string, string> = query.ranges === true ? { ranges: 'include' } : query.ranges === 'only' ? { ranges: 'only' } : {};
    return this.feed<PhoneNumberFeed>('phone-numbers', query, options, ranges);
  }

  /**
   * The caller's events matching `filters`, newest first, page after page (docs/api.md §8):
   * `for await (const page of client.listEvents({ limit: 500 })) …`.
   * Starts at `filters.cursor` when given; ends after the page whose `next_cursor` is null.
   * `options` bound each page's request.
   */
  async *listEvents(filters: EventFilters = {}, options?: CallOptions): AsyncGenerator<WithRateLimit<EventPage>, void, undefined> {
    let cursor = filters.cursor;
    do {
      const page = await this.listEventsPage({ ...filters, cursor }, options);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  /** One page of the caller's events (docs/api.md §8), with the `event_reads` allowance left. */
  async listEventsPage(filters: EventFilters = {}, options?: CallOptions): Promise<WithRateLimit<EventPage>> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(filters)) if (value !== undefined) query.set(name, String(value));
    const search = query.toString();
    const answer = await this.call('GET', `/events${search ? `?${search}` : ''}`, options);
    if (answer.status !== 200) throw failure(answer);
    return withRateLimit(answer.json as EventPage, answer.headers);
  }

  /** One of the caller's events by its uuid, or null when the account has none such (docs/api.md §8). */
  async getEvent(eventUuid: string, options?: CallOptions): Promise<StoredEvent | null> {
    const answer = await this.call('GET', `/events/${encodeURIComponent(eventUuid)}`, options);
    if (answer.status === 404) return null;
    if (answer.status !== 200) throw failure(answer);
    return answer.json as StoredEvent;
  }

  private async feed<T>(kind: 'ip-addresses' | 'phone-numbers', query: FeedQuery, options: CallOptions | undefined, extra: Record<string, string> = {}): Promise<WithRateLimit<FeedPoll<T>>> {
    const search = new URLSearchParams({ format: 'json', ...extra });
    if (query.minScore !== undefined) search.set('min_score', String(query.minScore));
    if (query.since !== undefined) search.set('since', query.since);
    const answer = await this.call('GET', `/feeds/${kind}?${search}`, options, undefined, query.ifNoneMatch === undefined ? {} : { 'if-none-match': query.ifNoneMatch });
    const etag = answer.headers.get('etag');
    if (answer.status === 304) return withRateLimit({ notModified: true, etag }, answer.headers);
    if (answer.status !== 200) throw failure(answer);
    return withRateLimit({ notModified: false, etag, feed: answer.json as T }, answer.headers);
  }

  private async lookup<T extends object>(path: string, options: CallOptions | undefined): Promise<WithRateLimit<T>> {
    const answer = await this.call('GET', path, this.lookupOptions(options));
    // 404 with `found: false` is the contract's "never seen" (docs/api.md §7), not a problem.
    if (answer.status !== 200 && !(answer.status === 404 && isNotFoundLookup(answer.json))) throw failure(answer);
    return withRateLimit(answer.json as T, answer.headers);
  }

  private async bulkLookup<T>(path: string, member: string, values: readonly string[], options: CallOptions | undefined): Promise<WithRateLimit<T[]>> {
    const results: T[] = [];
    let headers: Headers | undefined;
    for (const batch of splitIntoBatches(values, BULK_VALUES, BULK_BYTES)) {
      const answer = await this.call('POST', path, this.lookupOptions(options), `{${JSON.stringify(member)}:[${batch.json.join(',')}]}`);
      if (answer.status !== 200) throw failure(answer);
      results.push(...(answer.json as { results: T[] }).results);
      headers = answer.headers;
    }
    return headers ? withRateLimit(results, headers) : results;
  }

  /** One call's bounds, its deadline counted from now. */
  private bounds(options: CallOptions | undefined): Bounds {
    return {
      signal: options?.signal,
      deadline: options?.deadlineMs !== undefined && Number.isFinite(options.deadlineMs) ? new Deadline(options.deadlineMs) : undefined,
      timeoutMs: options?.timeoutMs,
      onRetry: this.onRetry,
    };
  }

  /** A lookup's bounds: the caller's, with the lookups' deadline when the caller set none. */
  private lookupOptions(options: CallOptions | undefined): CallOptions {
    if (options?.deadlineMs !== undefined || !Number.isFinite(this.lookupDeadlineMs)) return options ?? {};
    return { ...options, deadlineMs: this.lookupDeadlineMs };
  }

  /**
   * One API request with a bearer token, retried by the retry policy within the call's bounds.
   * A 401 means the token was revoked or expired early: it is dropped, a new one fetched, and
   * the request sent once more; a second 401 is the caller's to see.
   */
  private async call(method: 'GET' | 'POST', path: string, options: CallOptions | undefined, body?: string, extraHeaders: Record<string, string> = {}): Promise<Answer> {
    const bounds = this.bounds(options);
    const send = (token: string) =>
      fetchWithRetries(
        this.fetch,
        `${this.api}${path}`,
        {
          method,
          headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...extraHeaders },
          ...(body === undefined ? {} : { body }),
        },
        this.retry,
        this.sleep,
        bounds,
      );
    let token = await this.tokens.get(bounds);
    let answer = await send(token);
    if (answer.status === 401) {
      await answer.body?.cancel().catch(() => {});
      this.tokens.invalidate(token);
      token = await this.tokens.get(bounds);
      answer = await send(token);
    }
    let text: string;
    try {
      text = await answer.text();
    } catch (err) {
      // The body was cut off by the caller's signal or the deadline, or by the network.
      throwIfEnded(bounds, err);
      throw err;
    }
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: answer.status, json, headers: answer.headers };
  }
}

/** The error an unsuccessful answer stands for. */
function failure(answer: Answer): TollwatchError {
  const problem = isProblem(answer.json) ? answer.json : undefined;
  return new TollwatchError(answer.status, problem, parseRetryAfter(answer.headers.get('retry-after')));
}

function isProblem(json: unknown): json is Problem {
  return typeof json === 'object' && json !== null && typeof (json as Problem).error === 'string';
}

function isNotFoundLookup(json: unknown): boolean {
  return typeof json === 'object' && json !== null && (json as { found?: unknown }).found === false;
}

/** Attaches the answer's RateLimit as a property JSON.stringify leaves out. */
function withRateLimit<T extends object>(value: T, headers: Headers): WithRateLimit<T> {
  const rateLimit = readRateLimit(headers);
  if (rateLimit) Object.defineProperty(value, 'rateLimit', { value: rateLimit, enumerable: false });
  return value;
}
