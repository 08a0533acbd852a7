/** How requests are retried on 429, 502, 503, 504 and network errors. */
export interface RetryPolicy {
  /** Tries in all, the first included (default 5). */
  maxAttempts: number;
  /** The first backoff step in milliseconds, doubled each try (default 500). */
  baseDelayMs: number;
  /** The largest backoff step in milliseconds (default 30,000). */
  maxDelayMs: number;
  /**
   * The longest `Retry-After` worth waiting for, in seconds (default 60). A longer one (a plan's
   * hourly allowance spent, say) is not slept through: the error is thrown at once, carrying it.
   */
  maxRetryAfterSeconds: number;
  /** How long one try may take before it counts as a network error, in milliseconds (default 30,000). */
  timeoutMs: number;
}

/** The defaults: five tries over roughly half a minute at most, unless the server asks to wait. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000, maxRetryAfterSeconds: 60, timeoutMs: 30_000 };

/**
 * Answers worth trying again: the allowance spent, the store briefly down, and the 502 and 504 a
 * proxy in front sends while the server restarts. Every request the SDK makes is safe to repeat:
 * reads, lookups and submissions alike (an event resent is a 200 replay, docs/api.md §5).
 */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/**
 * The wait before try `attempt + 1` (attempt counts from 1): "full jitter" exponential backoff,
 * so that many clients refused together do not return together; never shorter than the
 * server's `Retry-After`, to which a little jitter is added for the same reason.
 */
export function backoffDelay(attempt: number, retryAfterSeconds: number | undefined, policy: RetryPolicy, random = Math.random): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  const jittered = random() * step;
  if (retryAfterSeconds === undefined) return jittered;
  return retryAfterSeconds * 1000 + random() * Math.min(step, 1000);
}

/** Reads `Retry-After`: delay seconds, or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
