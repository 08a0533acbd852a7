import type { Problem } from './generated/api-types.ts';

/** One bad field of a `validation_failed` problem (docs/api.md §4). */
export interface FieldError {
  field: string;
  message: string;
}

/**
 * An `/api` answer that is an error: the RFC 9457 problem document's members (docs/api.md §4)
 * and the HTTP status. An answer that was not a problem document (a proxy's error page, say)
 * gets `error: "unexpected_response"` and its status.
 */
export class TollwatchError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The stable machine code, such as `validation_failed` or `rate_limited`. */
  readonly error: Problem['error'] | 'unexpected_response' | (string & {});
  /** The problem type URI: the section of the server's `/problems` page that explains the code. */
  readonly type: string | undefined;
  /** A short human title of the code. */
  readonly title: string | undefined;
  /** What went wrong with this request, safe to show. */
  readonly detail: string | undefined;
  /** For `validation_failed`: every bad field. */
  readonly errors: readonly FieldError[] | undefined;
  /** Seconds the server asked to wait (`Retry-After`), on 429 and 503. */
  readonly retryAfter: number | undefined;
  /** The problem document as received, when the answer was one. */
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, retryAfter?: number) {
    super(problem ? `${problem.error}: ${problem.detail}` : `unexpected answer: HTTP ${status}`);
    this.name = 'TollwatchError';
    this.status = status;
    this.problem = problem;
    this.error = problem?.error ?? 'unexpected_response';
    this.type = problem?.type;
    this.title = problem?.title;
    this.detail = problem?.detail;
    this.errors = problem?.errors;
    this.retryAfter = retryAfter;
  }
}

/**
 * The token endpoint refused the client (docs/api.md §2): the RFC 6749 §5.2 `error` (such as
 * `invalid_client` for a wrong id or secret) and `error_description`, and the HTTP status.
 */
export class OAuthError extends Error {
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The RFC 6749 error code, or `unexpected_response` for an answer that was not one. */
  readonly error: string;
  /** The server's description of the error, safe to show. */
  readonly error_description: string | undefined;
  /** Seconds the server asked to wait (`Retry-After`), on 429 and 503. */
  readonly retryAfter: number | undefined;

  constructor(status: number, error: string, description: string | undefined, retryAfter?: number) {
    super(description ? `${error}: ${description}` : error);
    this.name = 'OAuthError';
    this.status = status;
    this.error = error;
    this.error_description = description;
    this.retryAfter = retryAfter;
  }
}

/**
 * A call outlived the deadline its caller set (`deadlineMs`, or the client's default for lookups):
 * no answer came in time, or none could come in what was left of it. `cause` is the last
 * failure seen, when there was one.
 */
export class DeadlineExceededError extends Error {
  /** The budget the call had, in milliseconds. */
  readonly deadlineMs: number;

  constructor(deadlineMs: number, cause?: unknown) {
    super(`no answer within the call's deadline of ${deadlineMs} ms`, cause === undefined ? undefined : { cause });
    this.name = 'DeadlineExceededError';
    this.deadlineMs = deadlineMs;
  }
}
