import { DeadlineExceededError } from './errors.ts';

/**
 * How one call may be bounded by its caller (docs/clients.md, "Bounding a call"). A dial plan
 * or a proxy has a budget for an answer: past it, a failure it can act on (fail open, say) is
 * worth more than a late answer.
 */
export interface CallOptions {
  /** Ends the call at once when aborted, with the signal's reason: a try in flight and a wait alike. */
  signal?: AbortSignal;
  /**
   * The whole call's budget in milliseconds: the token request if one is needed, every try and
   * every wait between tries. Past it the call throws DeadlineExceededError. A wait the server
   * asks for (`Retry-After`) that would end past it is not begun: the answer is thrown at once.
   */
  deadlineMs?: number;
  /** One try's bound in milliseconds (the retry policy's `timeoutMs` otherwise). */
  timeoutMs?: number;
}

/** Told before each wait between tries, so that a caller can log or count them. */
export interface RetryNotice {
  method: string;
  url: string;
  /** The try that failed, counting from 1. */
  attempt: number;
  /** How long the SDK will wait before the next try. */
  delayMs: number;
  /** The answer's status, when the try got one (429, 502, 503, 504). */
  status?: number;
  /** The `Retry-After` the answer carried, in seconds. */
  retryAfterSeconds?: number;
  /** The network error, when the try got no answer. */
  error?: unknown;
}

/** A call's end in time: a signal that aborts when it passes, and what is left of it. */
export class Deadline {
  readonly ms: number;
  readonly signal: AbortSignal;
  private readonly endsAt: number;

  constructor(ms: number) {
    this.ms = ms;
    this.signal = AbortSignal.timeout(ms);
    this.endsAt = performance.now() + ms;
  }

  /** Milliseconds left, never below 0. */
  remaining(): number {
    return Math.max(0, this.endsAt - performance.now());
  }
}

/** One call's bounds, as the request code carries them. */
export interface Bounds {
  signal?: AbortSignal | undefined;
  deadline?: Deadline | undefined;
  timeoutMs?: number | undefined;
  onRetry?: ((notice: RetryNotice) => void) | undefined;
}

/** Every signal that ends a try or a wait of this call. */
export function endingSignals(bounds: Bounds): AbortSignal[] {
  const signals: AbortSignal[] = [];
  if (bounds.signal) signals.push(bounds.signal);
  if (bounds.deadline) signals.push(bounds.deadline.signal);
  return signals;
}

/**
 * Throws what ended the call, if anything did: the caller's abort reason, or the deadline. Called
 * after every failure, so that an abort is never mistaken for a network error worth retrying.
 */
export function throwIfEnded(bounds: Bounds, cause?: unknown): void {
  if (bounds.signal?.aborted) throw bounds.signal.reason;
  const deadline = bounds.deadline;
  if (!deadline) return;
  // A try's timer set to what was left of the deadline is the deadline, though the deadline's
  // own timer, set a moment before, may not have fired yet.
  const cutAtDeadline = deadline.remaining() <= 1 && (cause as Error | undefined)?.name === 'TimeoutError';
  if (deadline.signal.aborted || cutAtDeadline) throw new DeadlineExceededError(deadline.ms, cause);
}

/**
 * Waits for `promise` within the call's bounds: a token request shared with other calls goes on
 * when this call gives up, for the next call to use.
 */
export function withinBounds<T>(promise: Promise<T>, bounds: Bounds): Promise<T> {
  const signals = endingSignals(bounds);
  if (signals.length === 0) return promise;
  return new Promise<T>((resolve, reject) => {
    const ended = () => {
      try {
        throwIfEnded(bounds);
      } catch (err) {
        reject(err);
      }
    };
    if (signals.some((s) => s.aborted)) return ended();
    for (const s of signals) s.addEventListener('abort', ended, { once: true });
    const done = () => {
      for (const s of signals) s.removeEventListener('abort', ended);
    };
    promise.then(
      (value) => {
        done();
        resolve(value);
      },
      (err: unknown) => {
        done();
        reject(err);
      },
    );
  });
}
