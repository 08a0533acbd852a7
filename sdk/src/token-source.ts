import { withinBounds, type Bounds, type RetryNotice } from './call-bounds.ts';
import { OAuthError } from './errors.ts';
import type { Operations } from './generated/api-types.ts';
import { parseRetryAfter, type RetryPolicy } from './retry-policy.ts';
import { fetchWithRetries, type FetchFunction, type Sleep } from './retrying-fetch.ts';

/** An access token kept outside the client, and when it expires (milliseconds since the epoch). */
export interface SavedToken {
  accessToken: string;
  expiresAt: number;
}

/**
 * Where tokens outlive the client: a CLI's file, say, so that each run does not ask for a token
 * of its own. `load` is asked once, before the first token request; `save` after every token
 * received. Either failing is as if there were no cache. Keep it as secret as the client secret.
 */
export interface TokenCache {
  load(): SavedToken | undefined | Promise<SavedToken | undefined>;
  save(token: SavedToken): void | Promise<void>;
}

/** The client secret, or a function that reads the current one (from a vault, after a rotation). */
export type SecretSource = string | (() => string | Promise<string>);

/** What the token source needs to ask for tokens. */
export interface TokenSourceOptions {
  tokenUrl: string;
  clientId: string;
  clientSecret: SecretSource;
  audience: string | undefined;
  /** Renew this many seconds before the token expires (at most half its lifetime). */
  renewBeforeSeconds: number;
  fetch: FetchFunction;
  retry: RetryPolicy;
  sleep: Sleep;
  now: () => number;
  onRetry?: ((notice: RetryNotice) => void) | undefined;
  cache?: TokenCache | undefined;
}

type TokenAnswer = Operations['requestToken']['responses']['200'];

/** How long a token must still be valid to be used while its successor is fetched: a slow request's worth. */
const STILL_VALID_MS = 10_000;
/** How long after a failed renewal the next is tried in the background. */
const RENEW_PAUSE_MS = 5_000;

/**
 * Access tokens by the client-credentials grant (docs/api.md §2), cached until shortly before
 * they expire. Requests that need a token together share one token request. A token due for
 * renewal but still valid is used while its successor is fetched, so that a call on a call path
 * does not wait for a token request it could have done without.
 */
export class TokenSource {
  private readonly options: TokenSourceOptions;
  private cached: { token: string; renewAt: number; expiresAt: number } | undefined;
  private pending: Promise<string> | undefined;
  /** No renewal in the background before this time: the last one failed. */
  private quietUntil = 0;
  /** The cache's token, read once. */
  private loading: Promise<void> | undefined;
  private loaded = false;

  constructor(options: TokenSourceOptions) {
    this.options = options;
  }

  /** A token valid for a while yet: the cached one, or a new one, waited for within `bounds`. */
  get(bounds: Bounds = {}): Promise<string> {
    // Every call waits for the one read of the cache, so calls made together share its token.
    if (this.options.cache && !this.loaded) {
      this.loading ??= this.load().finally(() => {
        this.loaded = true;
      });
      return withinBounds(this.loading, bounds).then(() => this.get(bounds));
    }
    const now = this.options.now();
    const cached = this.cached;
    if (cached && now < cached.renewAt) return Promise.resolve(cached.token);
    // Still valid for the length of a request: use it, and let the renewal finish meanwhile
    // (after a failed one, not at every call).
    if (cached && now < cached.expiresAt - STILL_VALID_MS) {
      if (now >= this.quietUntil) void this.renew();
      return Promise.resolve(cached.token);
    }
    return withinBounds(this.renew(), bounds);
  }

  /**
   * Forgets `token` after the API refused it (revoked, or expired early by a clock that
   * disagrees), so the next get() asks for a new one. A token already replaced is left alone:
   * requests refused together renew once.
   */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  /** Takes the cache's token when it is valid for a while yet. */
  private async load(): Promise<void> {
    const saved = await Promise.resolve()
      .then(() => this.options.cache?.load())
      .catch(() => undefined);
    if (this.cached || !saved || typeof saved.accessToken !== 'string' || !(saved.expiresAt > this.options.now() + STILL_VALID_MS)) return;
    // Its lifetime is not kept: renew before the end as a fresh token would, at most halfway through what is left.
    const margin = Math.min(this.options.renewBeforeSeconds * 1000, (saved.expiresAt - this.options.now()) / 2);
    this.cached = { token: saved.accessToken, renewAt: saved.expiresAt - margin, expiresAt: saved.expiresAt };
  }

  /** The token request under way, or a new one. */
  private renew(): Promise<string> {
    if (!this.pending) {
      this.pending = this.request().finally(() => {
        this.pending = undefined;
      });
      // A call that gave up waiting, or a renewal in the background, leaves the request without
      // a listener: its failure is the next caller's to see, not an unhandled rejection.
      this.pending.catch(() => {
        this.quietUntil = this.options.now() + RENEW_PAUSE_MS;
      });
    }
    return this.pending;
  }

  private async request(): Promise<string> {
    const o = this.options;
    const body: Operations['requestToken']['requestBody'] = {
      grant_type: 'client_credentials',
      client_id: o.clientId,
      client_secret: typeof o.clientSecret === 'string' ? o.clientSecret : await o.clientSecret(),
      ...(o.audience ? { audience: o.audience } : {}),
    };
    const requestedAt = o.now();
    const answer = await fetchWithRetries(
      o.fetch,
      o.tokenUrl,
      { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) },
      o.retry,
      o.sleep,
      { onRetry: o.onRetry },
    );
    const json = (await answer.json().catch(() => undefined)) as Partial<TokenAnswer & { error: string; error_description: string }> | undefined;
    if (answer.status !== 200 || typeof json?.access_token !== 'string') {
      const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
      throw new OAuthError(answer.status, typeof json?.error === 'string' ? json.error : 'unexpected_response', json?.error_description, retryAfter);
    }
    const lifetime = typeof json.expires_in === 'number' ? json.expires_in : 0;
    // From when the request was sent, so a slow answer cannot make the token look younger than it is.
    const margin = Math.min(o.renewBeforeSeconds, lifetime / 2);
    this.cached = { token: json.access_token, renewAt: requestedAt + (lifetime - margin) * 1000, expiresAt: requestedAt + lifetime * 1000 };
    await Promise.resolve()
      .then(() => o.cache?.save({ accessToken: json.access_token!, expiresAt: requestedAt + lifetime * 1000 }))
      .catch(() => {});
    return json.access_token;
  }
}
