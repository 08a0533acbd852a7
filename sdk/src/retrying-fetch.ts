import { backoffDelay, parseRetryAfter, RETRYABLE_STATUSES, type RetryPolicy } from './retry-policy.ts';

/** The `fetch` the SDK calls: the global one unless another is given. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** Waits; replaceable so that tests need not. */
export type Sleep = (ms: number) => Promise<void>;

/** The real wait. */
export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends a request, trying again on a retryable status or a network error (a refused connection,
 * a reset, a try that outlived `timeoutMs`), at most `maxAttempts` times. Returns the last
 * answer, whatever its status; throws the last network error. A `Retry-After` beyond
 * `maxRetryAfterSeconds` ends the tries at once: the caller reports it rather than sleeping.
 */
export async function fetchWithRetries(fetchFn: FetchFunction, url: string, init: RequestInit, policy: RetryPolicy, sleep: Sleep): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    let answer: Response;
    try {
      answer = await fetchFn(url, { ...init, signal: AbortSignal.timeout(policy.timeoutMs) });
    } catch (err) {
      if (attempt >= policy.maxAttempts) throw err;
      await sleep(backoffDelay(attempt, undefined, policy));
      continue;
    }
    if (!RETRYABLE_STATUSES.has(answer.status) || attempt >= policy.maxAttempts) return answer;
    const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
    if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterSeconds) return answer;
    // The body is not read: release the connection before waiting.
    await answer.body?.cancel().catch(() => {});
    await sleep(backoffDelay(attempt, retryAfter, policy));
  }
}
