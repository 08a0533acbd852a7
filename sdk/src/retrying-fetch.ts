import { endingSignals, throwIfEnded, type Bounds } from './call-bounds.ts';
import { backoffDelay, parseRetryAfter, RETRYABLE_STATUSES, type RetryPolicy } from './retry-policy.ts';

/** The `fetch` the SDK calls: the global one unless another is given. */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/** Waits; replaceable so that tests need not. It should end early when `signal` aborts; if it does not, the SDK checks after. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** The real wait, ended early by the signal. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Sends a request, trying again on a retryable status or a network error (a refused connection,
 * a reset, a try that outlived its timeout), at most `maxAttempts` times. Returns the last
 * answer, whatever its status; throws the last network error. A `Retry-After` beyond
 * `maxRetryAfterSeconds`, or a wait that would end past the call's deadline, ends the tries at
 * once: the caller reports the answer rather than sleeping. The caller's signal and the deadline
 * end a try or a wait the moment they fire (throwIfEnded says which).
 */
export async function fetchWithRetries(fetchFn: FetchFunction, url: string, init: RequestInit, policy: RetryPolicy, sleep: Sleep, bounds: Bounds = {}): Promise<Response> {
  const method = init.method ?? 'GET';
  const ending = endingSignals(bounds);
  for (let attempt = 1; ; attempt++) {
    throwIfEnded(bounds);
    const tryMs = bounds.timeoutMs ?? policy.timeoutMs;
    const leftMs = bounds.deadline ? Math.max(1, Math.ceil(bounds.deadline.remaining())) : Infinity;
    const signal = AbortSignal.any([AbortSignal.timeout(Math.min(tryMs, leftMs)), ...ending]);
    let answer: Response;
    try {
      answer = await fetchFn(url, { ...init, signal });
    } catch (err) {
      throwIfEnded(bounds, err);
      const delayMs = backoffDelay(attempt, undefined, policy);
      if (attempt >= policy.maxAttempts || !fits(bounds, delayMs)) throw err;
      bounds.onRetry?.({ method, url, attempt, delayMs, error: err });
      await wait(sleep, delayMs, bounds);
      continue;
    }
    if (!RETRYABLE_STATUSES.has(answer.status) || attempt >= policy.maxAttempts) return answer;
    const retryAfter = parseRetryAfter(answer.headers.get('retry-after'));
    if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterSeconds) return answer;
    const delayMs = backoffDelay(attempt, retryAfter, policy);
    if (!fits(bounds, delayMs)) return answer;
    // The body is not read: release the connection before waiting.
    await answer.body?.cancel().catch(() => {});
    bounds.onRetry?.({ method, url, attempt, delayMs, status: answer.status, ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }) });
    await wait(sleep, delayMs, bounds);
  }
}

/** Whether a wait of `ms` leaves the call any time for another try. */
function fits(bounds: Bounds, ms: number): boolean {
  return !bounds.deadline || ms < bounds.deadline.remaining();
}

async function wait(sleep: Sleep, ms: number, bounds: Bounds): Promise<void> {
  const ending = endingSignals(bounds);
  await sleep(ms, ending.length === 0 ? undefined : AbortSignal.any(ending));
  throwIfEnded(bounds);
}
