import { OAuthError } from './errors.ts';
import type { Operations } from './generated/api-types.ts';
import { parseRetryAfter, type RetryPolicy } from './retry-policy.ts';
import { fetchWithRetries, type FetchFunction, type Sleep } from './retrying-fetch.ts';

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
}

type TokenAnswer = Operations['requestToken']['responses']['200'];

/**
 * Access tokens by the client-credentials grant (docs/api.md §2), cached until shortly before
 * they expire. Requests that need a token together share one token request.
 */
export class TokenSource {
  private readonly options: TokenSourceOptions;
  private cached: { token: string; renewAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(options: TokenSourceOptions) {
    this.options = options;
  }

  /** A token valid for a while yet: the cached one, or a new one. */
  get(): Promise<string> {
    if (this.cached && this.options.now() < this.cached.renewAt) return Promise.resolve(this.cached.token);
    this.pending ??= this.request().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /**
   * Forgets `token` after the API refused it (revoked, or expired early by a clock that
   * disagrees), so the next get() asks for a new one. A token already replaced is left alone:
   * requests refused together renew once.
   */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
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
    );
    const json = (await answer.json().catch(() => undefined)) as Partial<TokenAnswer & { error: string; error_description: string }> | undefined;
    if (answer.status !== 200 || typeof json?.access_token !== 'string') {
      const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
      throw new OAuthError(answer.status, typeof json?.error === 'string' ? json.error : 'unexpected_response', json?.error_description, retryAfter);
    }
    const lifetime = typeof json.expires_in === 'number' ? json.expires_in : 0;
    // From when the request was sent, so a slow answer cannot make the token look younger than it is.
    const margin = Math.min(o.renewBeforeSeconds, lifetime / 2);
    this.cached = { token: json.access_token, renewAt: requestedAt + (lifetime - margin) * 1000 };
    return json.access_token;
  }
}
