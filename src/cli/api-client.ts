import { OAuthError, Tollwatch, TollwatchError, type RetryPolicy } from '../../sdk/src/index.ts';
import { escapeControlCharacters } from './terminal-text.ts';

/** What the user commands read from the environment (docs/cli.md). */
export interface ApiEnvironment {
  TOLLWATCH_URL?: string | undefined;
  TOLLWATCH_CLIENT_ID?: string | undefined;
  TOLLWATCH_CLIENT_SECRET?: string | undefined;
  TOLLWATCH_AUDIENCE?: string | undefined;
}

/** A user command could not do its work: its message goes to standard error, and the exit status is 2. */
export class ApiCommandError extends Error {
  override readonly name = 'ApiCommandError';
}

/**
 * An SDK client from TOLLWATCH_URL, TOLLWATCH_CLIENT_ID, TOLLWATCH_CLIENT_SECRET and the optional
 * TOLLWATCH_AUDIENCE. Read from the environment only, not from `.env`: a `.env` beside a server
 * holds the server's settings, where TOLLWATCH_AUDIENCE is its list of accepted audiences.
 */
export function apiClientFromEnvironment(env: ApiEnvironment, retry: Partial<RetryPolicy> = {}): Tollwatch {
  const missing = (['TOLLWATCH_URL', 'TOLLWATCH_CLIENT_ID', 'TOLLWATCH_CLIENT_SECRET'] as const).filter((name) => !env[name]);
  if (missing.length > 0) throw new ApiCommandError(`set ${missing.join(', ')} (the server's address and your API client's credentials)`);
  let url: URL;
  try {
    url = new URL(env.TOLLWATCH_URL!);
  } catch {
    throw new ApiCommandError('TOLLWATCH_URL is not a URL (e.g. https://tollwatch.example.com)');
  }
  // The server's own variable is a comma-separated list whose first entry is its default; one
  // exported for a server in the same shell should not become an audience nobody accepts.
  const audience = env.TOLLWATCH_AUDIENCE?.split(',')[0]?.trim() || undefined;
  return new Tollwatch({
    baseUrl: url.href,
    clientId: env.TOLLWATCH_CLIENT_ID!,
    clientSecret: env.TOLLWATCH_CLIENT_SECRET!,
    ...(audience ? { audience } : {}),
    retry,
    // A shell's lookups are bounded by their few quick tries (LOOKUP_RETRY), not a call path's deadline.
    lookupDeadlineMs: Infinity,
  });
}

/**
 * One line for standard error saying why a user command failed; server text has its control
 * characters escaped. `credentials` says where the client id and secret came from, for the hint.
 */
export function describeApiFailure(err: unknown, env: ApiEnvironment = {}, credentials = 'TOLLWATCH_CLIENT_ID and TOLLWATCH_CLIENT_SECRET'): string {
  if (err instanceof ApiCommandError) return err.message;
  if (err instanceof OAuthError) {
    const hint = err.error === 'invalid_client' ? `: check ${credentials}` : '';
    return escapeControlCharacters(`the server refused the credentials (${err.error}${err.error_description ? `: ${err.error_description}` : ''})${hint}`);
  }
  if (err instanceof TollwatchError) {
    const wait = err.retryAfter !== undefined ? `; try again in ${err.retryAfter} s` : '';
    const fields = (err.errors ?? []).map((e) => `; ${e.field}: ${e.message}`).join('');
    return escapeControlCharacters(`${err.detail ?? `HTTP ${err.status}`} (${err.error})${fields}${wait}`);
  }
  if (err instanceof Error) {
    // fetch's own errors say only "fetch failed"; the reason (ECONNREFUSED, a bad certificate) is their cause.
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    const where = err instanceof TypeError || err.name === 'TimeoutError' ? `cannot reach ${env.TOLLWATCH_URL ?? 'the server'}: ` : '';
    return escapeControlCharacters(`${where}${err.message.split('\n')[0]}${cause}`);
  }
  return 'failed';
}
